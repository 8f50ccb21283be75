import { type Browser, chromium } from 'playwright-core';

/**
 * Headless Chromium from Debian's package, as the page tests drive it: no sandbox (CI runs as root),
 * and none of the background fetches a fresh profile would try on a network that reaches nothing.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
