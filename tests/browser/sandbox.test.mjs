// The sandbox's chat page in headless Chromium, as a person would use it: an ask from a
// terminal shows its card in the page, a click on Yes runs the action once, and the page shows
// the card edited with the outcome while the waiting `consentd ask` exits 0. Then how the page
// looks: buttons that read as pressable (a destructive card's Yes in red), settled cards set
// back with their outcome emphasised, one part badge and one file size each, the newest card in
// view while a photo above it loads, a favicon, and the page's own words in the owner's language.
//
// Run by .ci/browser-test; by hand: `node --test` here, after `cargo build`. CONSENTD_BIN and
// CHROMIUM override the binaries' paths. Screenshots land in target/browser/: sandbox.png (the
// chat after Yes), settled.png (a settled card), sandbox-ru.png (the page after /lang ru).

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
const SHOTS = path.join(ROOT, 'target/browser');
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

/** The WCAG contrast ratio of two computed CSS colours ("rgb(r, g, b)"), both opaque. */
function contrast(a, b) {
  const luminance = (css) => {
    const [r, g, bl, alpha = 1] = css.match(/[\d.]+/g).map(Number);
    assert.equal(alpha, 1, `${css} is not opaque`);
    const lin = (c) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(bl);
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** Each button's label, colours and classes, as the browser draws them. */
function buttonLooks(locator) {
  return locator.evaluateAll((buttons) => buttons.map((b) => {
    const style = getComputedStyle(b);
    return { text: b.textContent, color: style.color, background: style.backgroundColor, classes: [...b.classList], disabled: b.disabled };
  }));
}

/** Starts `consentd ask ARGS` against the sandbox; resolves with its exit code, stdout, stderr. */
function ask(socket, args) {
  const child = spawn(BIN, ['ask', ...args], {
    env: { ...process.env, CONSENTD_SOCKET: socket },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => { out += chunk; });
  child.stderr.on('data', (chunk) => { err += chunk; });
  return exited(child).then((code) => ({ code, out, err }));
}

test('the sandbox page, as the owner uses it', async () => {
  const stateDir = mkdtempSync(path.join(tmpdir(), 'consentd-browser-state-'));
  const profile = mkdtempSync(path.join(tmpdir(), 'consentd-browser-profile-'));
  const cover = path.join(stateDir, 'cover.png');
  writeFileSync(cover, png(240, 120));
  const poster = path.join(stateDir, 'poster.png');
  writeFileSync(poster, png(200, 600));
  let sandboxErr = '';
  const sandbox = spawn(BIN, ['sandbox', '--port', '0', '--state-dir', stateDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  sandbox.stderr.on('data', (chunk) => { sandboxErr += chunk; });
  let context = null;
  try {
    const { socket, page: pageUrl } = await banner(sandbox, () => sandboxErr);
    // The page's address carries its secret: 32 random bytes in hex.
    assert.match(pageUrl, /^http:\/\/127\.0\.0\.1:\d+\/s\/[0-9a-f]{64}\/$/);
    mkdirSync(SHOTS, { recursive: true });

    const asked = ask(socket, ['--kind', 'publish_x', '--target', '@example', '--text', TEXT, '--attach', cover, '--json']);

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

    // Yes and No read as buttons: opaque, dark on light, well apart from the card behind them.
    const card = page.locator('.row.in', { hasText: TEXT });
    await card.getByRole('button', { name: 'Yes' }).waitFor();
    const bubble = await card.locator('.bubble').evaluate((b) => getComputedStyle(b).backgroundColor);
    for (const look of await buttonLooks(card.locator('.keyboard').getByRole('button'))) {
      assert.ok(contrast(look.color, look.background) >= 4.5, `${look.text} is hard to read: ${JSON.stringify(look)}`);
      assert.notEqual(look.background, bubble, `${look.text} does not stand out from its card`);
      assert.ok(!look.classes.includes('danger'), `${look.text} is not on a destructive card`);
      assert.equal(look.disabled, false);
    }
    assert.equal(await card.locator('.msg.settled').count(), 0, 'a card waiting for an answer is not settled');

    await card.getByRole('button', { name: 'Yes' }).click();
    await card.getByText('Outcome: done').waitFor();

    assert.equal(await card.locator('.keyboard button').count(), 0, 'the edited card has no buttons');
    assert.equal(await card.locator('.edited').count(), 1, 'the card is marked edited');
    assert.equal(await card.locator('b').count(), 0, 'markup in the text stays text');
    assert.match(await card.innerText(), /Result: https:\/\/example\.org\/sandbox\/posts\/r_/);
    // Settled: set back, with its outcome (and only that) emphasised.
    assert.equal(await card.locator('.msg.settled').count(), 1, 'the answered card is settled');
    const outcome = card.locator('.outcome');
    assert.match(await outcome.innerText(), /^Outcome: done\. Decided by Owner\.\nResult: https:\/\/example\.org\//);
    const [settledInk, outcomeWeight] = await outcome.evaluate((o) => [
      getComputedStyle(o.closest('.bubble')).color, Number(getComputedStyle(o).fontWeight),
    ]);
    const openInk = await page.locator('header').evaluate((h) => getComputedStyle(h).color);
    assert.notEqual(settledInk, openInk, 'a settled card is muted');
    assert.ok(outcomeWeight >= 700, `the outcome is emphasised: ${outcomeWeight}`);
    await card.locator('.msg').screenshot({ path: path.join(SHOTS, 'settled.png') });

    // The attachment came as a document just before the card, previewed: the browser drew it.
    const photoRow = page.locator('.row.in', { has: page.locator('.photo img') }).first();
    const photo = photoRow.locator('.photo img');
    await photo.waitFor();
    const drawn = await photo.evaluate((img) => img.complete && img.naturalWidth);
    assert.equal(drawn, 240, 'the photo is drawn at its size');
    // Its size and hash are said once, in consentd's caption, not again by the page.
    const photoText = await photoRow.innerText();
    assert.equal(photoText.match(/KiB/g)?.length, 1, `one file size: ${photoText}`);
    assert.equal(photoText.match(/SHA-256/g)?.length, 1, `one hash: ${photoText}`);
    await page.screenshot({ path: path.join(SHOTS, 'sandbox.png') });

    const { code, out, err } = await within(asked, PATIENCE, 'consentd ask to exit');
    assert.equal(code, 0, `consentd ask exited ${code}: ${err}`);
    const final = JSON.parse(out.trim().split('\n').pop());
    assert.equal(final.status, 'executed');
    assert.match(final.result, /^https:\/\/example\.org\/sandbox\/posts\/r_/);

    // A destructive card: its Yes is red, and still says Yes.
    const doomed = await ask(socket, ['--kind', 'delete_post', '--target', '@old_post', '--no-wait']);
    assert.equal(doomed.code, 8, doomed.err);
    const destructive = page.locator('.row.in', { hasText: doomed.out.trim() });
    await destructive.getByRole('button', { name: 'Yes' }).waitFor();
    assert.equal(await destructive.locator('.msg.destructive').count(), 1);
    const [yes, no] = await buttonLooks(destructive.locator('.keyboard').getByRole('button'));
    assert.equal(yes.text, 'Yes');
    assert.ok(yes.classes.includes('danger'), 'the Yes is marked destructive');
    const [r, g, b] = yes.background.match(/\d+/g).map(Number);
    assert.ok(r > 150 && g < 80 && b < 80, `the Yes is red: ${yes.background}`);
    assert.ok(contrast(yes.color, yes.background) >= 4.5, JSON.stringify(yes));
    assert.ok(!no.classes.includes('danger'), 'the No is not');
    await destructive.getByRole('button', { name: 'No', exact: true }).click();
    await destructive.locator('.msg.settled .outcome', { hasText: 'Outcome: declined' }).waitFor();

    // "No, and say why…", then the reason written on the page as a reply to the card.
    const asking = await ask(socket, ['--kind', 'publish_x', '--target', '@why', '--text', 'Say why', '--no-wait']);
    assert.equal(asking.code, 8, asking.err);
    const whyCard = page.locator('.row.in', { hasText: asking.out.trim() });
    await whyCard.getByRole('button', { name: 'No, and say why…' }).click();
    await whyCard.getByText('Reply to this message by').waitFor();
    await whyCard.locator('.meta .reply').click();
    await page.locator('#replying-text', { hasText: 'Replying to:' }).waitFor();
    await page.locator('#text').fill('Not on a Sunday');
    await page.locator('#send').click();
    await page.locator('.row.in', { hasText: 'Sent to the agent with your No.' }).waitFor();
    assert.ok(await page.locator('#replying').isHidden(), 'the reply is sent and done');

    // A text too long for its card comes in parts, each with one badge and no [i/N] line.
    const long = 'Long text for its parts. '.repeat(200);
    const parted = await ask(socket, ['--kind', 'generate_image', '--text', long, '--cost-usd', '0.04', '--no-wait']);
    assert.equal(parted.code, 8, parted.err);
    await page.locator('.row.in', { hasText: parted.out.trim() }).getByRole('button', { name: 'Yes' }).waitFor();
    const parts = page.locator('.row.in', { has: page.locator('.badge') });
    assert.deepEqual(await parts.locator('.badge').allInnerTexts(), ['part 1 of 2', 'part 2 of 2']);
    for (const text of await parts.locator('.text').allInnerTexts()) {
      assert.ok(!/^\[\d+\/\d+\]/.test(text), `the part header is shown once, as its badge: ${text.slice(0, 20)}`);
    }

    // The newest card stays in view while a photo above it loads after the chat is drawn.
    const late = await ask(socket, ['--kind', 'publish_x', '--target', '@late', '--text', 'A tall poster', '--attach', poster, '--no-wait']);
    assert.equal(late.code, 8, late.err);
    const lateCard = page.locator('.row.in', { hasText: late.out.trim() });
    await lateCard.getByRole('button', { name: 'Yes' }).waitFor();
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    await page.route('**/api/file/**', async (route) => { await held; await route.continue(); });
    await page.reload();
    await lateCard.getByRole('button', { name: 'Yes' }).waitFor();
    const poster_ = page.locator('.photo img').last();
    assert.equal(await poster_.evaluate((img) => img.naturalWidth), 0, 'the poster is still loading');
    release();
    await page.waitForFunction(() => [...document.querySelectorAll('.photo img')].every((img) => img.complete && img.naturalWidth > 0));
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    const inView = await lateCard.getByRole('button', { name: 'Yes' }).evaluate((button) => {
      const chat = document.getElementById('chat').getBoundingClientRect();
      const box = button.getBoundingClientRect();
      return box.top >= chat.top && box.bottom <= chat.bottom;
    });
    assert.ok(inView, 'the newest card\'s buttons are in view once the photo above them has loaded');
    await page.unroute('**/api/file/**');

    // The favicon: the page's own, served as an inert SVG.
    const icon = await page.evaluate(async () => {
      const response = await fetch(document.querySelector('link[rel=icon]').href);
      return [response.status, response.headers.get('content-type')];
    });
    assert.deepEqual(icon, [200, 'image/svg+xml']);

    // The page's API answers only under its secret: the same requests without it are refused.
    const refused = await page.evaluate(async () => {
      const statuses = [];
      statuses.push((await fetch('/api/chat')).status);
      const body = JSON.stringify({ message_id: 1, data: 'x' });
      const headers = { 'Content-Type': 'application/json' };
      statuses.push((await fetch('/api/press', { method: 'POST', headers, body })).status);
      return statuses;
    });
    assert.deepEqual(refused, [403, 403]);

    // The page's own words follow the owner's language.
    assert.equal(await page.locator('#send').innerText(), 'Send');
    await page.locator('#text').fill('/lang ru');
    await page.locator('#send').click();
    await page.locator('html[lang="ru"]').waitFor();
    await page.locator('.row.in', { hasText: 'Язык: русский.' }).waitFor();
    assert.equal(await page.locator('#send').innerText(), 'Отправить');
    assert.match(await page.locator('#text').getAttribute('placeholder'), /^Напишите боту/);
    assert.equal(await page.title(), 'Песочница consentd');
    assert.deepEqual(await parts.locator('.badge').allInnerTexts(), ['часть 1 из 2', 'часть 2 из 2']);
    assert.ok(await page.locator('.meta .edited', { hasText: 'изменено' }).count() >= 2);
    assert.ok(await page.locator('.meta .loud', { hasText: 'со звуком' }).count() >= 1);
    assert.ok(await page.locator('.meta .silent', { hasText: 'без звука' }).count() >= 1);
    assert.equal(await page.locator('.meta', { hasText: /with sound|silent|edited/ }).count(), 0);
    const ru = await ask(socket, ['--kind', 'delete_post', '--target', '@ru_post', '--no-wait']);
    assert.equal(ru.code, 8, ru.err);
    const ruCard = page.locator('.row.in', { hasText: ru.out.trim() });
    await ruCard.getByRole('button', { name: 'Да' }).waitFor();
    assert.ok((await buttonLooks(ruCard.getByRole('button', { name: 'Да' })))[0].classes.includes('danger'));
    await page.screenshot({ path: path.join(SHOTS, 'sandbox-ru.png') });
  } finally {
    if (context) await context.close();
    sandbox.kill('SIGTERM');
    const code = await within(exited(sandbox), PATIENCE, 'the sandbox to stop');
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(profile, { recursive: true, force: true });
    assert.equal(code, 0, `the sandbox stopped with ${code}: ${sandboxErr}`);
  }
});
