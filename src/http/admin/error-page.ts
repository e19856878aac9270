import { html } from './html.js';
import type { PageContext } from './page-context.js';
import { document } from './page-layout.js';

export function errorPage(context: PageContext | null, status: number, message: string): string {
  return document(
    `Error ${status}`,
    html`<h1>Error ${status}</h1>
      <p class="error">${message}</p>`,
    context,
  );
}
