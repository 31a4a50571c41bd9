#!/usr/bin/env node
/**
 * bootwright's command line, in the style of kubectl:
 *
 *   bootwright render FILE [--format cloud-config|ignition] [--ignition-version X.Y.Z]
 *                          [--platform NAME] [-o OUT]        (or render -f FILE)
 *   bootwright validate FILE [--format cloud-config|ignition] (valid: it renders)
 *   bootwright serve [--host ADDR] [--port PORT] [--data-dir DIR] [--config FILE] [--detach]
 *   bootwright get clusters|profiles|machines|discovered [NAME] [-l SELECTOR] [-o table|yaml|json|name]
 *   bootwright apply -f FILE|DIR|-
 *   bootwright delete KIND NAME
 *   bootwright reset-fetches MACHINE
 *   bootwright describe machine NAME
 *   bootwright enroll DISCOVERED --profile P --cluster C [--name N]
 *   bootwright status
 *   bootwright upgrade check [--data-dir DIR] [-o table|json]   (before an upgrade; read-only)
 *   bootwright controller [--kubeconfig FILE] [--namespace NS] [--watch-filter V] [--leader-elect] …
 *                          (the Cluster API bootstrap provider; docs/cluster-api.md)
 *   bootwright version | --version
 *   bootwright help [COMMAND] | COMMAND --help
 *
 * The inventory commands talk to a running service (`--server`/BOOTWRIGHT_URL,
 * `--token`/BOOTWRIGHT_TOKEN or `--token-file`/BOOTWRIGHT_TOKEN_FILE).
 *
 * Exit codes ({@link EXIT}): 0 success; 2 bad input or usage (one line per problem,
 * naming the field or flag; nothing is written to OUT, nothing is sent); 1 an
 * unexpected failure, or the service could not start; 3 the service refused the
 * request (its problem printed: title, detail, each field); 4 the service could not
 * be reached, did not answer in time, or failed (5xx).
 */
// First: V8's heap settings hold before any other module allocates (src/heap.ts).
import './heap.js';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EXIT, UsageError, commandHelp, overallHelp, parseCommand, type Command } from './cli/commands.js';
import { RENDER, VALIDATE, runRender, runValidate } from './cli/render.js';
import { CONTROLLER, runController } from './cli/controller.js';
import { SERVE, runServe } from './cli/serve.js';
import { APPLY, runApply } from './cli/inventory/apply.js';
import { printRefusal, ServerRefusal, ServerUnavailable } from './cli/inventory/client.js';
import { printable } from './cli/inventory/kinds.js';
import { DELETE, runDelete } from './cli/inventory/delete.js';
import { DESCRIBE, runDescribe } from './cli/inventory/describe.js';
import { DIFF, runDiff } from './cli/inventory/diff.js';
import { ENROLL, runEnroll } from './cli/inventory/enroll.js';
import { RESET_FETCHES, runResetFetches } from './cli/inventory/reset-fetches.js';
import { GET, runGet } from './cli/inventory/get.js';
import { runStatus, STATUS } from './cli/inventory/status.js';
import { runUpgrade, UPGRADE } from './cli/upgrade.js';
import { ConfigError } from './config.js';
import { RequestError } from './errors.js';
import { RULES_VERSION } from './rules.js';
import { PACKAGE_VERSION, RENDERER_VERSION } from './version.js';

/** `bootwright version`. */
const VERSION: Command = {
  name: 'version',
  summary: 'Print the version of bootwright, its renderers and Node.js',
  usage: ['version', '--version'],
  positionals: 0,
  flags: [],
};

/** `bootwright help`. */
const HELP: Command = {
  name: 'help',
  summary: 'Show help for bootwright or one of its commands',
  usage: ['help [COMMAND]'],
  positionals: 1,
  flags: [],
};

/** Every command, in the order help lists them. */
const COMMANDS: readonly Command[] = [RENDER, VALIDATE, SERVE, CONTROLLER, GET, APPLY, DIFF, DELETE, RESET_FETCHES, DESCRIBE, ENROLL, STATUS, UPGRADE, VERSION, HELP];

/** A suggestion for a mistyped command: one whose name shares its first two letters. */
function didYouMean(name: string): string {
  const near = COMMANDS.find((c) => c.name.startsWith(name.slice(0, 2)));
  return near ? `\n\nDid you mean this?\n  ${near.name}` : '';
}

/** Standard input, whole. */
async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Run the CLI.
 *
 * @param argv arguments after the program name.
 * @returns the exit code ({@link EXIT}). `serve` and `controller` resolve once they run;
 *   the process then runs until a signal.
 */

export async function main(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '-h' || name === '--help') {
    out.write(overallHelp(COMMANDS));
    return EXIT.ok;
  }
  if (name === '--version') {
    out.write(`bootwright ${PACKAGE_VERSION}\n`);
    return EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  try {
    if (!command) {
      throw new UsageError(name.startsWith('-') ? `unknown flag: ${name}` : `unknown command "${name}" for "bootwright"${didYouMean(name)}`);
    }
    const parsed = parseCommand(command, args);
    if (parsed.values.help) {
      out.write(commandHelp(command));
      return EXIT.ok;
    }
    switch (command.name) {
      case 'render':
        return runRender(parsed, out, err);
      case 'validate':
        return runValidate(parsed, err);
      case 'serve':
        return await runServe(parsed, args, out, err);
      case 'controller':
        return await runController(parsed, err);
      case 'get':
        return await runGet(parsed, out);
      case 'apply':
        return await runApply(parsed, out, err, readStdin);
      case 'diff':
        return await runDiff(parsed, out, err, readStdin);
      case 'delete':
        return await runDelete(parsed, out, err, readStdin);
      case 'reset-fetches':
        return await runResetFetches(parsed, out);
      case 'describe':
        return await runDescribe(parsed, out);
      case 'enroll':
        return await runEnroll(parsed, out);
      case 'status':
        return await runStatus(parsed, out, err);
      case 'upgrade':
        return await runUpgrade(parsed, out);
      case 'version':
        out.write(`bootwright ${PACKAGE_VERSION}\nrenderer: ${RENDERER_VERSION}\nrules: ${RULES_VERSION}\nnode: ${process.version}\n`);
        return EXIT.ok;
      default: {
        const topic = parsed.positionals[0];
        if (topic === undefined) {
          out.write(overallHelp(COMMANDS));
          return EXIT.ok;
        }
        const about = COMMANDS.find((c) => c.name === topic);
        if (!about) throw new UsageError(`unknown command "${topic}" for "bootwright"${didYouMean(topic)}`, 'help');
        out.write(commandHelp(about));
        return EXIT.ok;
      }
    }
  } catch (e) {
    if (e instanceof RequestError) {
      for (const p of e.problems) err.write(`${p.path ? `${p.path}: ` : ''}${p.message}\n`);
      return EXIT.usage;
    }
    if (e instanceof UsageError) {
      const on = e.command ?? command?.name;
      err.write(`error: ${e.message}\nSee 'bootwright ${on ? `${on} ` : ''}--help' for usage.\n`);
      return EXIT.usage;
    }
    if (e instanceof ServerRefusal) {
      printRefusal(e, err);
      return EXIT.refused;
    }
    if (e instanceof ServerUnavailable) {
      // It quotes the service's answer (its title and detail).
      err.write(`error: ${printable(e.message)}\n`);
      return EXIT.unavailable;
    }
    if (e instanceof ConfigError) {
      err.write(`error: ${e.message}\n`);
      return EXIT.usage;
    }
    err.write(`internal error: ${(e as Error).message}\n`);
    return EXIT.failure;
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // A reader that went away (`bootwright get machines | head`) ends the command quietly,
  // as a closed pipe ends `kubectl get`: no EPIPE stack trace. Not the long-running
  // commands, which shut down in order on their signals.
  const longRunning = ['serve', 'controller'].includes(process.argv[2] ?? '');
  for (const stream of longRunning ? [] : [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(EXIT.ok);
      throw e;
    });
  }
  void main(process.argv.slice(2)).then((code) => {
    if (code !== 0) process.exitCode = code;
  });
}
