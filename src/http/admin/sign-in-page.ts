import { html } from './html.js';
import { document } from './page-layout.js';

export function signInPage(error: string | null): string {
  return document(
    'Sign in',
    html`<div class="signin">
      <h1>Sign in</h1>
      ${error ? html`<p class="error">${error}</p>` : ''}
      <form method="post" action="/admin/sign-in">
        <label>Admin token (ADMIN_TOKENS)<input type="password" name="token" autocomplete="current-password" required autofocus /></label><button type="submit">Sign in</button>
      </form>
    </div>`,
    null,
  );
}
