/**
 * Loaded with `--import` beside a process under `--trace-pretenuring-statistics`: when
 * the process exits (after its main module, and so after anything it imported, has run)
 * this prints a marker, then allocates from one site objects that survive young-generation
 * collections (300,000 held at once), which is what makes V8 pretenure a site, then
 * short-lived ones from the same site, three times over. V8's trace after the marker says
 * whether it decided to pretenure (`=> maybe tenure`, then `=> tenure`); test/heap.test.ts
 * reads it.
 */
export const MARKER = 'pretenure-probe: start';

function make(i: number): { i: number; a: number[]; b: { c: number } } {
  return { i, a: [i], b: { c: i } };
}

process.on('exit', () => {
  process.stdout.write(`\n${MARKER}\n`);
  let sink = 0;
  for (let round = 0; round < 3; round++) {
    const keep: ReturnType<typeof make>[] = [];
    for (let i = 0; i < 300_000; i++) keep.push(make(i));
    keep.length = 0;
    for (let i = 0; i < 1_000_000; i++) sink += make(i).b.c;
  }
  process.stdout.write(`pretenure-probe: done ${sink > 0}\n`);
});
