/**
 * A node:test reporter that prints nothing until the run ends, then the failing tests, each with its
 * file and the first line of its error. It runs beside the TAP reporter (package.json's test script),
 * so a failure a thousand lines up in CI's output is also named in its last lines. Plain JavaScript:
 * node loads reporters before the tsx loader is registered.
 */

/** @param {{ message?: string, cause?: unknown } | undefined} error */
function firstLine(error) {
  const cause = error?.cause;
  const message = cause instanceof Error ? cause.message : typeof cause === 'string' ? cause : (error?.message ?? '');
  return message.split('\n', 1)[0].slice(0, 300);
}

/** @param {AsyncIterable<{ type: string, data: any }>} source */
export default async function* failuresReporter(source) {
  const failures = [];
  for await (const event of source) {
    // A suite fails with its failing tests, which are listed themselves.
    if (event.type !== 'test:fail' || event.data.details?.type === 'suite') continue;
    failures.push(`failing: ${event.data.file ?? '?'} > ${event.data.name}: ${firstLine(event.data.details?.error)}`);
  }
  if (failures.length > 0) yield `\n${failures.length} failing test(s):\n${failures.join('\n')}\n`;
}
