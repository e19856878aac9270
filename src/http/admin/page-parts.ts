import { html, type SafeHtml } from './html.js';
import type { PageContext } from './page-context.js';

/** The token every form that changes something carries, bound to the session (session.ts). */
export const csrfField = (context: PageContext) => html`<input type="hidden" name="_csrf" value="${context.csrf}" />`;

/** A time as the dashboard writes times: UTC, to the second, without the ISO letters. */
export const time = (value: string | Date | null | undefined) => (value ? (value instanceof Date ? value.toISOString() : value).replace('T', ' ').replace(/\.\d+Z$|Z$/, '') : '');

/** A state in its colour (the stylesheet's status-* classes). */
export const statusCell = (status: string) => html`<span class="status-${status}">${status}</span>`;

/** One choice of a filter's select, chosen when it is the value the filter holds. */
export function option(value: string, selected: string | undefined, label = value): SafeHtml {
  return html`<option value="${value}" ${selected === value ? html`selected` : ''}>${label}</option>`;
}

/** Label and value pairs, one record's facts (an empty value shows as nothing). */
export function facts(entries: Array<[string, SafeHtml | string | number | null]>): SafeHtml {
  return html`<dl class="facts">
    ${entries.map(
      ([label, value]) =>
        html`<dt>${label}</dt>
          <dd>${value ?? ''}</dd>`,
    )}
  </dl>`;
}
