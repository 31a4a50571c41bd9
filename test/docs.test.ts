/**
 * The documentation stays true to the repository: every relative Markdown link in the
 * repository's Markdown files (README.md, docs/, examples/, bench/) names a file or
 * directory that exists inside the repository, and an anchor in it names a heading of
 * the linked document (GitHub's heading ids); no document points outside the clone
 * (`../shared`); every "DESIGN §N" cited in src/ and test/ is a numbered section of
 * docs/design.md; and docs/operating.md's configuration table lists exactly the
 * `BOOTWRIGHT_*` variables src/config.ts reads.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git']);

/** Files under `dir` (repository-relative paths) whose name ends in `suffix`, build output and dependencies left out. */
function filesUnder(dir: string, suffix: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) out.push(...filesUnder(path, suffix));
    } else if (entry.name.endsWith(suffix)) out.push(path);
  }
  return out.sort();
}

const MARKDOWN = filesUnder('', '.md');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/**
 * Markdown text with fenced code blocks and inline code spans blanked out (CommonMark
 * §4.5 and §6.1: no links are recognised inside them), line structure kept.
 */
function proseOf(markdown: string): string {
  const withoutFences = markdown.replace(/^( {0,3})(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ {0,3}\2[`~]*[ \t]*$/gm, (block) => block.replace(/[^\n]/g, ' '));
  return withoutFences.replace(/(`+)[\s\S]*?\1/g, (span) => span.replace(/[^\n]/g, ' '));
}

/** Destinations of inline links and images (`[text](dest "title")`) and link reference definitions (`[label]: dest`). */
function linkTargets(markdown: string): string[] {
  const prose = proseOf(markdown);
  const targets: string[] = [];
  for (const m of prose.matchAll(/!?\[[^\]\n]*\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+"[^"\n]*")?\s*\)/g)) targets.push(m[1]!.replace(/^<|>$/g, ''));
  for (const m of prose.matchAll(/^ {0,3}\[[^\]\n]+\]:\s*(<[^>\n]*>|\S+)/gm)) targets.push(m[1]!.replace(/^<|>$/g, ''));
  return targets;
}

/**
 * The anchors GitHub gives a document's headings: the heading text lower-cased, without
 * Markdown code and emphasis marks, characters other than letters, digits, spaces, `-`
 * and `_` removed, spaces turned into `-`; a repeated id gets `-1`, `-2`, … appended.
 */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of proseOf(markdown).matchAll(/^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$/gm)) {
    const line = markdown.slice(m.index, m.index + m[0].length);
    const text = line.replace(/^ {0,3}#{1,6}[ \t]+/, '').replace(/[ \t#]*$/, '');
    const base = text
      .toLowerCase()
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Whether a link destination leaves the repository's files (a URL with a scheme, or protocol-relative). */
const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');

describe('documentation links', () => {
  it('finds the documents it checks', () => {
    for (const doc of ['README.md', 'docs/README.md', 'docs/design.md', 'docs/operating.md', 'docs/bare-metal.md']) assert.ok(MARKDOWN.includes(doc), doc);
  });

  it('every relative link names a file or directory inside the repository, and its anchor a heading there', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const doc of MARKDOWN) {
      const text = read(doc);
      for (const target of linkTargets(text)) {
        if (isExternal(target)) continue;
        checked++;
        const [rawPath, anchor] = target.split('#', 2) as [string, string | undefined];
        const path = decodeURIComponent(rawPath);
        const file = path === '' ? join(ROOT, doc) : resolve(ROOT, dirname(doc), path);
        const inside = relative(ROOT, file);
        if (inside.startsWith('..') || inside.split(sep).includes('..') || resolve(file) === resolve(ROOT, '..')) {
          broken.push(`${doc}: ${target} leaves the repository`);
          continue;
        }
        if (!existsSync(file)) {
          broken.push(`${doc}: ${target} does not exist`);
          continue;
        }
        if (anchor !== undefined && anchor !== '' && statSync(file).isFile() && file.endsWith('.md')) {
          if (!headingAnchors(readFileSync(file, 'utf8')).has(decodeURIComponent(anchor))) broken.push(`${doc}: ${target}: no heading with id "${anchor}"`);
        }
      }
    }
    assert.deepEqual(broken, []);
    assert.ok(checked >= 20, `only ${checked} relative links found: is the link parser broken?`);
  });

  it('no document points outside the clone (../shared)', () => {
    const offenders = MARKDOWN.filter((doc) => read(doc).includes('../shared'));
    assert.deepEqual(offenders, []);
  });
});

describe('the link checker itself', () => {
  it('reads inline links, images and reference definitions, not code', () => {
    const md = ['See [a](docs/a.md#x "t") and ![i](<img/b c.png>).', '`[not](code.md)`', '```', '[nor](fenced.md)', '```', '[ref]: ./ref.md', ''].join('\n');
    assert.deepEqual(linkTargets(md), ['docs/a.md#x', 'img/b c.png', './ref.md']);
  });

  it('makes GitHub heading ids', () => {
    const ids = headingAnchors('# 4. HTTP (contract)\n### 4.2 Content negotiation\n## Files in the `data` directory\n## Upgrade\n## Upgrade\n');
    assert.deepEqual([...ids], ['4-http-contract', '42-content-negotiation', 'files-in-the-data-directory', 'upgrade', 'upgrade-1']);
  });
});

describe('DESIGN § citations', () => {
  it('every "DESIGN §N" in src/ and test/ is a numbered section of docs/design.md', () => {
    const design = read('docs/design.md');
    const sections = new Map<number, string>();
    for (const m of design.matchAll(/^## (\d+)\. (.+)$/gm)) sections.set(Number(m[1]), m[2]!);
    assert.ok(sections.size >= 6, 'docs/design.md has numbered "## N. Title" sections');
    const missing: string[] = [];
    let citations = 0;
    for (const file of [...filesUnder('src', '.ts'), ...filesUnder('test', '.ts'), 'examples/README.md']) {
      // "DESIGN §4", "DESIGN §2–§3", "DESIGN §3, §4", "DESIGN §4–§5"
      for (const m of read(file).matchAll(/DESIGN (§\d+(?:\s*(?:[–,-]|and)\s*§\d+)*)/g)) {
        for (const n of m[1]!.matchAll(/§(\d+)/g)) {
          citations++;
          if (!sections.has(Number(n[1]))) missing.push(`${file}: DESIGN §${n[1]!}`);
        }
      }
    }
    assert.deepEqual(missing, []);
    assert.ok(citations >= 30, `only ${citations} citations found: is the pattern broken?`);
  });

  it('the sections the source cites mean what it cites them for', () => {
    const titles = [...read('docs/design.md').matchAll(/^## (\d+)\. (.+)$/gm)].map((m) => `${m[1]!} ${m[2]!}`);
    for (const [n, word] of [
      [1, 'pipeline'],
      [2, 'request'],
      [3, 'node receives'],
      [4, 'HTTP'],
      [5, 'Security'],
      [6, 'Storage'],
    ] as const) {
      assert.ok(titles.some((t) => t.startsWith(`${n} `) && t.includes(word)), `§${n} is about ${word}: ${titles.join(' | ')}`);
    }
  });
});

describe('configuration documentation', () => {
  it('docs/operating.md lists exactly the BOOTWRIGHT_* variables src/config.ts reads', () => {
    const code = new Set(read('src/config.ts').match(/BOOTWRIGHT_[A-Z_]+/g));
    const table = read('docs/operating.md')
      .split('\n')
      .filter((l) => l.startsWith('| `BOOTWRIGHT_'))
      .map((l) => /^\| `(BOOTWRIGHT_[A-Z_]+)`/.exec(l)![1]!);
    assert.ok(code.size >= 15, `src/config.ts names ${code.size} variables`);
    assert.deepEqual([...new Set(table)].sort(), [...code].sort(), 'a variable read by src/config.ts is missing from docs/operating.md, or the table names one the code does not read');
  });
});
