import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** The documents a reader follows links through: the README, the changelog and docs/ (its generated API reference aside). */
const DOCUMENTS = [
  'README.md',
  'CHANGELOG.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** A document's lines outside fenced code blocks, where a `#` starts a heading and `[x](y)` is a link. */
function proseLines(text: string): string[] {
  let fence: string | null = null;
  const lines: string[] = [];
  for (const line of text.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === null || marker.startsWith(fence))) fence = fence === null ? marker : null;
    else if (fence === null) lines.push(line);
  }
  return lines;
}

/**
 * The anchors GitHub gives a document's headings: the heading's text as shown (no code marks, a link's
 * text only), lower case, without punctuation or symbols other than `-` and `_`, each space a `-`; a
 * second heading of the same text gets `-1`, a third `-2`.
 */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const shown = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
    const slug = shown
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Every link and image target of a document's prose (inline code, where `[a](b)` is an example, aside). */
function linksOf(text: string): string[] {
  return proseLines(text).flatMap((line) => [...line.replace(/`[^`]*`/g, '').matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!));
}

test('every relative link of the README, the changelog and docs/ leads to a file that exists, and to a heading of it that exists', () => {
  const anchors = new Map<string, Set<string>>();
  const anchorsOfFile = (file: string) => {
    if (!anchors.has(file)) anchors.set(file, anchorsOf(readFileSync(file, 'utf8')));
    return anchors.get(file)!;
  };
  const broken: string[] = [];
  for (const document of DOCUMENTS) {
    const file = path.join(ROOT, document);
    for (const link of linksOf(readFileSync(file, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:: not ours to check here
      const [target = '', anchor] = link.split('#', 2);
      const resolved = target === '' ? file : path.resolve(path.dirname(file), decodeURIComponent(target));
      if (!existsSync(resolved)) broken.push(`${document}: ${link} (no such file)`);
      else if (anchor !== undefined && (statSync(resolved).isDirectory() || !resolved.endsWith('.md')))
        broken.push(`${document}: ${link} (an anchor in a file that has no headings)`);
      else if (anchor !== undefined && !anchorsOfFile(resolved).has(decodeURIComponent(anchor))) broken.push(`${document}: ${link} (no such heading)`);
    }
  }
  assert.deepEqual(broken, []);
});

/** Where comments and messages point a reader at a heading of docs/ (`docs/operations.md#systemd`). */
const POINTING = ['Dockerfile', 'compose.yaml', '.env.example', 'deploy', 'src', 'bin'];

function filesUnder(entry: string): string[] {
  const full = path.join(ROOT, entry);
  return statSync(full).isDirectory() ? readdirSync(full).flatMap((name) => filesUnder(path.join(entry, name))) : [entry];
}

test('every heading of docs/ named in the Dockerfile, compose.yaml, .env.example, deploy/, src/ and bin/ exists', () => {
  const broken: string[] = [];
  for (const file of POINTING.flatMap(filesUnder)) {
    for (const [reference, document, anchor] of readFileSync(path.join(ROOT, file), 'utf8').matchAll(/docs\/([\w-]+\.md)#([\w-]+)/g)) {
      const target = path.join(ROOT, 'docs', document!);
      if (!existsSync(target) || !anchorsOf(readFileSync(target, 'utf8')).has(anchor!)) broken.push(`${file}: ${reference}`);
    }
  }
  assert.deepEqual(broken, []);
});

test('anchors are made as GitHub makes them', () => {
  const anchors = anchorsOf(
    [
      '# Operating webhook-inbox',
      '## Side effects: the outbox',
      '### events: what is stored',
      '### `copy`: moving an installation',
      '## Backups',
      '```sh',
      '# not a heading',
      '```',
      '## Backups',
    ].join('\n'),
  );
  assert.deepEqual([...anchors], ['operating-webhook-inbox', 'side-effects-the-outbox', 'events-what-is-stored', 'copy-moving-an-installation', 'backups', 'backups-1']);
  assert.deepEqual(linksOf('See [a](b.md#c), ![shot](screenshots/x.png) and `[not](a-link)`; [web](https://example.com).'), ['b.md#c', 'screenshots/x.png', 'https://example.com']);
});
