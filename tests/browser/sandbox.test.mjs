// The sandbox's chat page in headless Chromium, as a person would use it: an ask from a
// terminal shows its card in the page, a click on Yes runs the action once, and the page shows
// the card edited with the outcome while the waiting `consentd ask` exits 0.
//
// Run by .ci/browser-test; by hand: `node --test` here, after `cargo build`. CONSENTD_BIN and
// CHROMIUM override the binaries' paths. The screenshot lands in target/browser/sandbox.png.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = process.env.CONSENTD_BIN || path.join(ROOT, 'target/debug/consentd');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SCREENSHOT = path.join(ROOT, 'target/browser/sandbox.png');
// Every wait is bounded; nothing here sleeps.
const PATIENCE = 30_000;
// Markup in the text must show as text, never become an element of the page.
const TEXT = 'Hello <b>from</b> the browser test';

/** A small PNG (a colour gradient), made here so the repository holds no binary fixture. */
function png(width, height) {
  const table = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes) => {
    let c = 0xffffffff;
    for (const b of bytes) c = table[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), body.length + 4);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const rows = [];
  for (let y = 0; y < height; y++) {
    const row = [0];
    for (let x = 0; x < width; x++) row.push(40 + (x * 180) / width, 90 + (y * 120) / height, 200);
    rows.push(Buffer.from(row));
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Resolves with the exit code (or signal name) of a child process. */
function exited(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve(child.exitCode ?? child.signalCode);
    } else {
      child.once('exit', (code, signal) => resolve(code ?? signal));
    }
  });
}

function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Reads the sandbox's banner until it has printed `socket:` and `page:`. */
function banner(sandbox, stderr) {
  const found = {};
  return within(new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: sandbox.stdout });
    lines.on('line', (line) => {
      const match = /^(socket|page): (.+)$/.exec(line);
      if (match) found[match[1]] = match[2];
      if (found.socket && found.page) resolve(found);
    });
    sandbox.once('exit', (code) => reject(new Error(`the sandbox exited with ${code}: ${stderr()}`)));
  }), PATIENCE, 'the sandbox to print its socket and page');
}

test('an ask shows its card in the page, and Yes there runs it', async () => {
  const stateDir = mkdtempSync(path.join(tmpdir(), 'consentd-browser-state-'));
  const profile = mkdtempSync(path.join(tmpdir(), 'consentd-browser-profile-'));
  const cover = path.join(stateDir, 'cover.png');
  writeFileSync(cover, png(240, 120));
  let sandboxErr = '';
  const sandbox = spawn(BIN, ['sandbox', '--port', '0', '--state-dir', stateDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  sandbox.stderr.on('data', (chunk) => { sandboxErr += chunk; });
  let context = null;
  try {
    const { socket, page: pageUrl } = await banner(sandbox, () => sandboxErr);
    assert.match(pageUrl, /^http:\/\/127\.0\.0\.1:\d+\/$/);

    let askOut = '';
    let askErr = '';
    const args = ['ask', '--kind', 'publish_x', '--target', '@example', '--text', TEXT, '--attach', cover, '--json'];
    const ask = spawn(BIN, args, {
      env: { ...process.env, CONSENTD_SOCKET: socket },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    ask.stdout.on('data', (chunk) => { askOut += chunk; });
    ask.stderr.on('data', (chunk) => { askErr += chunk; });
    const askExit = exited(ask);

    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
      ],
      viewport: { width: 900, height: 900 },
      timeout: PATIENCE,
    });
    const page = context.pages()[0] ?? await context.newPage();
    page.setDefaultTimeout(PATIENCE);
    await page.goto(pageUrl);

    const card = page.locator('.row.in', { hasText: TEXT });
    await card.getByRole('button', { name: 'Yes' }).click();
    await card.getByText('Outcome: done').waitFor();

    assert.equal(await card.getByRole('button').count(), 0, 'the edited card has no buttons');
    assert.equal(await card.locator('.edited').count(), 1, 'the card is marked edited');
    assert.equal(await card.locator('b').count(), 0, 'markup in the text stays text');
    assert.match(await card.innerText(), /Result: https:\/\/example\.org\/sandbox\/posts\/r_/);
    // The attachment came as a document just before the card, previewed: the browser drew it.
    const photo = page.locator('.row.in .photo img');
    await photo.waitFor();
    const drawn = await photo.evaluate((img) => img.complete && img.naturalWidth);
    assert.equal(drawn, 240, 'the photo is drawn at its size');

    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });

    const code = await within(askExit, PATIENCE, 'consentd ask to exit');
    assert.equal(code, 0, `consentd ask exited ${code}: ${askErr}`);
    const final = JSON.parse(askOut.trim().split('\n').pop());
    assert.equal(final.status, 'executed');
    assert.match(final.result, /^https:\/\/example\.org\/sandbox\/posts\/r_/);
  } finally {
    if (context) await context.close();
    sandbox.kill('SIGTERM');
    const code = await within(exited(sandbox), PATIENCE, 'the sandbox to stop');
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(profile, { recursive: true, force: true });
    assert.equal(code, 0, `the sandbox stopped with ${code}: ${sandboxErr}`);
  }
});
