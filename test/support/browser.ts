import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's chromium, which `.ci/run` installs when it is missing. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The browser, or a reason to skip; under REQUIRE_SERVICES=1 a missing browser fails instead. */
export async function launchBrowser(): Promise<Browser | { skip: string }> {
  if (!existsSync(CHROMIUM)) {
    const reason = `no browser at ${CHROMIUM} (apt-get install chromium)`;
    if (process.env.REQUIRE_SERVICES === '1') throw new Error(`${reason} (REQUIRE_SERVICES=1)`);
    return { skip: reason };
  }
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}

/** ADMIN_SCREENSHOTS=<dir> (e.g. docs/screenshots) writes a full-page screenshot of each screen there. */
export async function screenshot(page: Page, name: string): Promise<void> {
  const directory = process.env.ADMIN_SCREENSHOTS;
  if (!directory) return;
  await mkdir(directory, { recursive: true });
  await page.screenshot({ path: join(directory, `${name}.png`), fullPage: true });
}
