/**
 * Boot-time values found in the request (src/provision/plan/bootvalues.ts): native
 * requests read metadata only through `spec.nodeName.fromMetadata`; Jinja or metadata
 * variables in their kubeadm values are refused when written, at the field.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load, loadAll } from 'js-yaml';
import { renderNodeBootstrap } from '../../../src/render.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { ignitionFiles } from '../../support/decode.js';
import { problemsOf } from '../../support/errors.js';
import { worker } from '../../support/requests.js';

type Doc = Record<string, unknown>;

describe('boot-time values of native requests', () => {
  it('refuse cloud-init Jinja and metadata variables in kubeadm values, pointing to spec.nodeName.fromMetadata', () => {
    const jinja = problemsOf(() => validateNodeBootstrap(worker({ kubeadm: { joinConfiguration: { nodeRegistration: { name: '{{ ds.meta_data.local_hostname }}' } } } })));
    assert.deepEqual(jinja.map((p) => p.path), ['spec.kubeadm.joinConfiguration.nodeRegistration.name']);
    assert.match(jinja[0]!.message, /cloud-init Jinja in a kubeadm value.*spec\.nodeName\.fromMetadata/);
    const variable = problemsOf(() => validateNodeBootstrap(worker({ kubeadm: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'provider-id': 'aws:///${COREOS_EC2_INSTANCE_ID}' } } } } })));
    assert.deepEqual(variable.map((p) => p.path), ['spec.kubeadm.joinConfiguration.nodeRegistration.kubeletExtraArgs.provider-id']);
    assert.match(variable[0]!.message, /\$\{COREOS_EC2_INSTANCE_ID\}.*spec\.nodeName\.fromMetadata\.variable/);
  });

  it('keep other braces in kubeadm values, commands and files literal, with no Jinja header', () => {
    const body = renderNodeBootstrap(validateNodeBootstrap(worker({ kubeadm: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'node-labels': 'tmpl={{x}}' } } } }, provisioning: { preKubeadmCommands: ['echo {{ v1.instance_id }}'] } }))).body;
    assert.ok(body.startsWith('#cloud-config\n'));
    assert.deepEqual((load(body) as { runcmd: string[] }).runcmd[0], 'echo {{ v1.instance_id }}');
  });

  it('spec.nodeName.fromHostname: no nodeRegistration.name in either format (kubeadm takes the hostname); one way only', () => {
    const req = validateNodeBootstrap(worker({ nodeName: { fromHostname: true } }));
    const cloudConfig = renderNodeBootstrap(req).body;
    const kubeadm = (load(cloudConfig) as { write_files: { path: string; content: string }[] }).write_files.find((f) => f.path.includes('kubeadm') && f.content.includes('JoinConfiguration'))!.content;
    const joinDoc = (loadAll(kubeadm) as Doc[]).find((d) => d.kind === 'JoinConfiguration')!;
    assert.equal((joinDoc.nodeRegistration as Doc).name, undefined);
    const named = renderNodeBootstrap(validateNodeBootstrap(worker())).body;
    assert.match(named, /^ {8}name: /m, 'without it the node is named metadata.name');
    const ignition = JSON.parse(renderNodeBootstrap(req, { format: 'ignition' }).body) as Parameters<typeof ignitionFiles>[0];
    const text = [...ignitionFiles(ignition).values()].map((b) => b.toString('utf8')).find((t) => t.includes('kind: JoinConfiguration'))!;
    assert.doesNotMatch(text.slice(text.indexOf('nodeRegistration:')), /^ {2}name: /m);
    const both = problemsOf(() => validateNodeBootstrap(worker({ nodeName: { fromHostname: true, fromMetadata: { instanceData: 'v1.local_hostname' } } })));
    assert.deepEqual(both.map((p) => p.path), ['spec.nodeName']);
  });

  it('spec.nodeName.fromMetadata: Ignition needs a variable, named at its field', () => {
    const req = validateNodeBootstrap(worker({ nodeName: { fromMetadata: { instanceData: 'ds.meta_data.local_hostname' } } }));
    assert.deepEqual(problemsOf(() => renderNodeBootstrap(req, { format: 'ignition' })).map((p) => p.path), ['spec.nodeName.fromMetadata.variable']);
    assert.match(renderNodeBootstrap(req).body, /^ {8}name: "\{\{ ds\.meta_data\.local_hostname \}\}"$/m);
  });

  it('spec.nodeName.fromMetadata: AFTERBURN_ variables read /run/metadata/afterburn after afterburn.service; spec.output.metadataFile overrides', () => {
    const config = (output: Doc) => JSON.parse(renderNodeBootstrap(validateNodeBootstrap(worker({ nodeName: { fromMetadata: { variable: 'AFTERBURN_AWS_HOSTNAME' } }, output: { format: 'ignition', ...output } }))).body) as Doc & { systemd: { units: { name: string; contents?: string }[] } };
    const fcos = config({});
    assert.match(ignitionFiles(fcos).get('/etc/kubeadm/bootstrap.sh')!.toString(), /metadata\.sh \/run\/metadata\/afterburn \S+ AFTERBURN_AWS_HOSTNAME && kubeadm join/);
    assert.match(fcos.systemd.units.find((u) => u.name === 'kubeadm-bootstrap.service')!.contents!, /^After=afterburn\.service$/m);
    const own = config({ metadataFile: '/run/metadata/custom' });
    assert.match(ignitionFiles(own).get('/etc/kubeadm/bootstrap.sh')!.toString(), /metadata\.sh \/run\/metadata\/custom /);
    assert.doesNotMatch(own.systemd.units.find((u) => u.name === 'kubeadm-bootstrap.service')!.contents!, /afterburn/);
  });

  it('Cluster API input mixing COREOS_ and AFTERBURN_ variables needs spec.output.metadataFile', () => {
    const spec = { joinConfiguration: { nodeRegistration: { name: '${COREOS_EC2_HOSTNAME}', kubeletExtraArgs: { 'provider-id': 'aws:///${AFTERBURN_AWS_INSTANCE_ID}' } } } };
    const problems = problemsOf(() => validateNodeBootstrap(worker({ kubeadmConfigSpec: spec })));
    assert.match(problems[0]!.message, /mixes COREOS_ and AFTERBURN_ variables.*spec\.output\.metadataFile/);
    assert.doesNotThrow(() => validateNodeBootstrap(worker({ kubeadmConfigSpec: spec, output: { metadataFile: '/run/metadata/both' } })));
  });
});
