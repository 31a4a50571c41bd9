/**
 * ProvisioningPlan fixtures for the Ignition renderer tests: a minimal valid plan and
 * small builders for its parts, so each test states only what it is about.
 */
import type { PlanFile, ProvisioningPlan } from '../../../src/provision/plan/types.js';
import { SUCCESS_SENTINEL } from '../../../src/provision/plan/types.js';

/** A kubeadm join configuration, as the builder would give it. */
export const KUBEADM_YAML = 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\nnodeRegistration:\n  name: worker-a\n';

/**
 * The smallest valid plan: a worker that runs `kubeadm join` with no files, users,
 * disks or commands of its own. `overrides` replace top-level fields.
 */
export function makePlan(overrides: Partial<ProvisioningPlan> = {}): ProvisioningPlan {
  return {
    nodeName: 'worker-a',
    files: [],
    directories: [],
    users: [],
    disks: [],
    filesystems: [],
    mounts: [],
    units: [],
    commands: {
      boot: [],
      pre: [],
      main: { argv: ['kubeadm', 'join'], configFile: { name: 'kubeadm-join-config.yaml', contents: KUBEADM_YAML } },
      post: [],
    },
    successSentinel: SUCCESS_SENTINEL,
    warnings: [],
    ...overrides,
  };
}

/** A request file (`spec.provisioning.files[index]`) at `path` holding `contents`. */
export function planFile(index: number, path: string, contents: string | Uint8Array, extra: Partial<PlanFile> = {}): PlanFile {
  return {
    origin: `spec.provisioning.files[${index}]`,
    path,
    contents: typeof contents === 'string' ? Buffer.from(contents, 'utf8') : contents,
    mode: 0o644,
    owner: { user: 'root', group: 'root' },
    append: false,
    sourceEncoding: 'plain',
    deferred: false,
    secret: false,
    ...extra,
  };
}

/** Contents that break naive YAML, shell, JSON or URL handling, by name. */
export const HARD_TEXTS: Readonly<Record<string, string>> = {
  colon: 'key: value\nother: "x: y"\n',
  hash: '# comment\nvalue # not a comment?\n',
  percent: '100% sure %d %s %% %n %{x}\n',
  quotes: `it's "quoted" and 'single' and "double"\n`,
  subshell: 'echo $(date) `uname -a` ${HOME} $PATH\n',
  heredoc: "cat <<'EOF' > /etc/x\nline $NOT_EXPANDED\nEOF\ncat <<EOF\n$EXPANDED\nEOF\n",
  leadingSpaces: '    indented\n\ttabbed\n  \n',
  noTrailingNewline: 'no newline at the end',
  crlf: 'windows\r\nline endings\r\n',
  tabs: 'a\tb\t\tc\n',
  cjk: '日本語のテキスト 中文 한국어\n',
  emoji: '🚀 launch 👩‍💻 ✅\n',
  yamlish: 'yes\non\n0644\n~\nnull\nNo\nOFF\n',
  longLine: `${'x'.repeat(150)}${'y: z '.repeat(30)}\n`,
  braces: '{{ .Values.image }} {{- if x }}{{ end }} {% raw %}\n',
  jsonish: '{"a": [1, 2, {"b": null}], "c": "\\u00e9\\n"}\n',
  urlish: 'https://example.com/?a=1&b=2#frag+plus%20space\n',
  bom: '\ufeffstarts with a BOM\n',
  empty: '',
};

/** `n` pseudo-random bytes from a fixed seed (xorshift32), the same on every run. */
export function seededBytes(n: number, seed = 0x9e3779b9): Buffer {
  const out = Buffer.alloc(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/** About `bytes` of varied, compressible UTF-8 text (lines of words and numbers). */
export function bulkText(bytes: number): string {
  const words = ['node', 'cluster', 'kubelet', 'etcd', 'pod', 'network: 10.0.0.0/8', '# note', '%s', 'ünïcödé', '→'];
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = `${i} ${words[i % words.length]!} ${words[(i * 7) % words.length]!} ${(i * 2654435761) % 1000003}`;
    lines.push(line);
    size += Buffer.byteLength(line) + 1;
  }
  return `${lines.join('\n')}\n`;
}

/** A plan using every part the renderer handles. */
export function fullPlan(): ProvisioningPlan {
  return makePlan({
    files: [planFile(0, '/etc/app/config.yaml', HARD_TEXTS.colon!), planFile(1, '/etc/motd', 'hello\n', { append: true }), planFile(2, '/opt/blob', seededBytes(2000), { mode: 0o600 })],
    directories: [{ path: '/var/lib/app', mode: 0o750, owner: { user: 'root', group: 'root' } }],
    users: [
      { origin: 'spec.provisioning.users[0]', name: 'alice', groups: ['wheel', 'docker'], sshAuthorizedKeys: ['ssh-ed25519 AAAAC3Nza alice@x'], sudo: 'ALL=(ALL) NOPASSWD:ALL', shell: '/bin/bash', gecos: 'Alice A.', homeDir: '/home/alice', passwd: '$6$salt$hash' },
    ],
    ntp: { servers: ['0.pool.ntp.org', 'time.example.com'] },
    disks: [{ origin: 'spec.provisioning.diskSetup.partitions[0]', device: '/dev/sdb', tableType: 'gpt', tableTypeGiven: true, layout: true, overwrite: true }],
    filesystems: [{ origin: 'spec.provisioning.diskSetup.filesystems[0]', device: '/dev/sdb', filesystem: 'ext4', label: 'data', partition: '1', overwrite: true, extraOpts: ['-E', 'lazy_itable_init=1'] }],
    mounts: [
      { origin: 'spec.provisioning.mounts[0]', device: 'LABEL=data', mountPoint: '/var/lib/data', options: 'defaults,nofail', pass: '2' },
      { origin: 'spec.provisioning.mounts[1]', device: '/dev/sdc1', mountPoint: 'none', fsType: 'swap', options: 'sw' },
    ],
    units: [{ name: 'containerd.service', enabled: true }],
    commands: { boot: ['echo boot'], pre: ['echo pre'], main: { argv: ['kubeadm', 'join'], configFile: { name: 'kubeadm-join-config.yaml', contents: KUBEADM_YAML } }, post: ['echo post'] },
  });
}
