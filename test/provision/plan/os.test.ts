/**
 * The plan's OS rules (src/provision/plan/os.ts), as properties: a Windows-absolute path
 * is written unchanged on a Windows node and refused on a Linux one; a POSIX path the
 * other way round; two spellings of one Windows path are one path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { renderNodeBootstrap } from '../../../src/render.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { problemsOf } from '../../support/errors.js';
import { worker } from '../../support/requests.js';
import { cloudbaseInitFiles } from '../../support/windows.js';

const segment = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_ .-]{0,11}$/).filter((s) => !s.endsWith('.') && !s.endsWith(' ') && s !== '.' && s !== '..');
const windowsPath = fc.tuple(fc.constantFrom('c', 'C', 'd'), fc.constantFrom('/', '\\'), fc.array(segment, { minLength: 1, maxLength: 4 })).map(([d, sep, segs]) => `${d}:${sep}${segs.join(sep)}`);
const render = (req: unknown) => renderNodeBootstrap(validateNodeBootstrap(req));

describe('plan OS rules', () => {
  it('a Windows path: written as given on a Windows node, refused on a Linux node at the field', () => {
    fc.assert(
      fc.property(windowsPath, (path) => {
        const file = { path, content: 'x' };
        const files = cloudbaseInitFiles(render(worker({ output: { os: 'windows' }, provisioning: { files: [file] } })).body);
        assert.equal(files.get(path)?.toString(), 'x');
        assert.deepEqual(problemsOf(() => render(worker({ provisioning: { files: [file] } }))), [
          { path: 'spec.provisioning.files[0].path', message: 'is a Windows path; this node is linux (for a Windows node set spec.output.os: windows)' },
        ]);
      }),
      { numRuns: 40 },
    );
  });

  it('a POSIX path is refused on a Windows node; one Windows path in two spellings is refused as a duplicate', () => {
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 3 }), (segs) => {
        const posix = `/${segs.join('/')}`;
        assert.deepEqual(problemsOf(() => render(worker({ output: { os: 'windows' }, provisioning: { files: [{ path: posix, content: 'x' }] } }))).map((p) => p.path), ['spec.provisioning.files[0].path']);
        const a = `C:/${segs.join('/')}`;
        const b = `c:\\${segs.join('\\').toUpperCase()}`;
        const problems = problemsOf(() => render(worker({ output: { os: 'windows' }, provisioning: { files: [{ path: a, content: 'x' }, { path: b, content: 'y' }] } })));
        assert.deepEqual(problems.map((p) => p.path), ['spec.provisioning.files[1].path']);
        assert.match(problems[0]!.message, /^is the same Windows path as spec\.provisioning\.files\[0\]\.path/);
      }),
      { numRuns: 40 },
    );
  });
});
