import type { IncomingHttpHeaders } from 'node:http';

export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) return value.join(', ');
  return value === undefined || value === '' ? undefined : value;
}

/** The headers worth storing with an event so it can be verified again later. */
export function keptHeaders(headers: IncomingHttpHeaders, names: string[]): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of names) {
    const value = headerValue(headers, name);
    if (value !== undefined) kept[name] = value;
  }
  return kept;
}
