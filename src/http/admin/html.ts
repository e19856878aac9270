/** Markup that is already safe: built by `html`, never from a string someone else chose. */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Text as HTML text or attribute value: every character that could start markup or end a quoted attribute is escaped. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

/** What a template may interpolate: escaped unless it is SafeHtml. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/**
 * The only way pages make markup: every interpolated value is escaped unless it is itself `html`
 * (auto-escaping, as a template engine does). Attribute values must be quoted in the template.
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let text = strings[0]!;
  for (const [index, value] of values.entries()) text += render(value) + strings[index + 1]!;
  return new SafeHtml(text);
}

/** A path of ours with each dynamic segment encoded; payload strings never become a URL scheme. */
export function path(strings: TemplateStringsArray, ...segments: Array<string | number>): string {
  let text = strings[0]!;
  for (const [index, segment] of segments.entries()) text += encodeURIComponent(String(segment)) + strings[index + 1]!;
  return text;
}

/** A table column: its heading, its cell for a row (escaped like any value), and the cells' class. */
export type Column<T> = [heading: string, cell: (row: T) => HtmlValue, className?: string];

/**
 * A table of `rows` under `columns`, every cell escaped as `html` escapes it. With `empty`, no rows
 * show that sentence instead of an empty table.
 */
export function table<T>(columns: Array<Column<T>>, rows: T[], options: { empty?: string; className?: string } = {}): SafeHtml {
  if (rows.length === 0 && options.empty !== undefined) return html`<p>${options.empty}</p>`;
  return html`<table class="${options.className ?? ''}">
    <thead>
      <tr>
        ${columns.map(([heading]) => html`<th>${heading}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (row) =>
          html`<tr>
            ${columns.map(([, cell, className]) => html`<td class="${className ?? ''}">${cell(row)}</td>`)}
          </tr>`,
      )}
    </tbody>
  </table>`;
}
