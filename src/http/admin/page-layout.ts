import { html, type SafeHtml } from './html.js';
import type { PageContext } from './page-context.js';
import { csrfField } from './page-parts.js';

/** A whole page: its head, the navigation and who is signed in (none on the sign-in page, `context` null), then `body`. */
export function document(title: string, body: SafeHtml, context: PageContext | null, refreshSeconds?: number): string {
  const nav = context
    ? html`<header>
        <span class="brand">webhook-inbox</span>
        <nav>
          <a href="/admin">Overview</a><a href="/admin/events">Events</a><a href="/admin/payments">Payments</a><a href="/admin/problems">Failed &amp; stuck</a
          ><a href="/admin/outbox">Outbox</a><a href="/admin/rejections">Rejected</a><a href="/admin/reconcile">Reconcile</a><a href="/admin/audit">Audit</a>
        </nav>
        <span class="who"
          >${context.actor.name}
          (${context.actor.role})${context.actor.via === 'proxy' ? '' : html`<form class="inline" method="post" action="/admin/sign-out">${csrfField(context)}<button class="secondary" type="submit">Sign out</button></form>`}</span
        >
      </header>`
    : '';
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${refreshSeconds ? html`<meta http-equiv="refresh" content="${refreshSeconds}" />` : ''}
        <title>${title} · webhook-inbox admin</title>
        <link rel="stylesheet" href="/admin/assets/admin.css" />
        <script src="/admin/assets/admin.js" defer></script>
      </head>
      <body>
        ${nav}
        <main>${body}</main>
      </body>
    </html>`.text;
}
