/** Cluster API file templates (`contentFormat: Template`): the supported subset of Go text/template. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FieldProblem } from '../../../src/errors.js';
import { executeTemplate } from '../../../src/request/capi/template.js';

const data = { controlPlane: { version: 'v1.33.2' } };

function run(text: string): { out: string; problems: FieldProblem[] } {
  const problems: FieldProblem[] = [];
  return { out: executeTemplate(text, data, 'f', problems), problems };
}

describe('executeTemplate', () => {
  it('fills in .controlPlane.version, with or without spaces, and leaves other text alone', () => {
    assert.deepEqual(run('K={{ .controlPlane.version }}\nK2={{.controlPlane.version}}\n'), { out: 'K=v1.33.2\nK2=v1.33.2\n', problems: [] });
    assert.deepEqual(run('no actions: $(date) ${X} { } }}\n'), { out: 'no actions: $(date) ${X} { } }}\n', problems: [] });
  });

  it('honours the trim markers {{- and -}} and drops comments', () => {
    assert.deepEqual(run('a  \n  {{- .controlPlane.version -}}  \n  b'), { out: 'av1.33.2b', problems: [] });
    assert.deepEqual(run('x{{/* a comment */}}y{{- /* trimmed */ -}}  z'), { out: 'xyz', problems: [] });
  });

  it('refuses a missing field, giving its position but not the content', () => {
    const { problems } = run('line one\nv={{ .controlPlane.secretValue }}');
    assert.deepEqual(problems, [{ path: 'f', message: 'template at line 2 column 3 reads .controlPlane.secretValue, which does not exist; available: .controlPlane.version' }]);
  });

  it('refuses functions, pipelines and control structures, and an unclosed action', () => {
    for (const text of ['{{ if .controlPlane.version }}x{{ end }}', '{{ .controlPlane.version | printf "%s" }}', '{{ printf "x" }}']) {
      const { problems } = run(text);
      assert.ok(problems.length > 0, text);
      assert.match(problems[0]!.message, /^template action at line 1 column 1 is not supported/);
    }
    assert.deepEqual(run('a {{ .controlPlane.version').problems, [{ path: 'f', message: 'template action at line 1 column 3 is not closed with }}' }]);
  });
});
