#!/usr/bin/env node
/**
 * bootwright's command line.
 *
 *   bootwright render -f FILE [--format cloud-config|ignition] [--ignition-version X.Y.Z]
 *                     [--platform aws|azure|gcp|openstack|vsphere] [-o OUT]
 *   bootwright validate -f FILE [--format cloud-config|ignition]   (valid: it renders)
 *   bootwright serve
 *
 * Exit codes: 0 success; 2 bad input or usage (one line per problem, naming the field;
 * nothing is written to OUT); 1 an unexpected failure.
 */
import { readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { serve } from './api/serve.js';
import { ConfigError, documentLimits, loadConfig } from './config.js';
import { RequestError } from './errors.js';
import { renderNodeBootstrap } from './render.js';
import type { DocumentLimits } from './request/bounds.js';
import { decodeUtf8, parseNodeBootstrap, syntaxForFile } from './request/parse.js';
import { OUTPUT_FORMATS, PLATFORMS, type NodeBootstrap, type OutputFormat, type Platform } from './request/schema.js';

const USAGE = `usage:
  bootwright serve                      (configured by BOOTWRIGHT_* variables or BOOTWRIGHT_CONFIG)
  bootwright render -f FILE [--format cloud-config|ignition] [--ignition-version X.Y.Z]
                    [--platform aws|azure|gcp|openstack|vsphere] [-o OUT]
  bootwright validate -f FILE [--format cloud-config|ignition]
FILE may be - for standard input (YAML or JSON).`;

class UsageError extends Error {}

/**
 * Read and validate the request named by `-f` (`-` is standard input), as UTF-8, under
 * the document limits the service would hold it to (`limits`).
 */
function readRequest(file: string | undefined, limits: DocumentLimits): NodeBootstrap {
  if (!file) throw new UsageError('-f FILE is required');
  let bytes: Buffer;
  try {
    bytes = readFileSync(file === '-' ? 0 : file);
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const text = decodeUtf8(bytes);
  return parseNodeBootstrap(text, file === '-' ? (text.trimStart().startsWith('{') ? 'json' : 'yaml') : syntaxForFile(file), limits);
}

/** Write OUT atomically: a sibling temporary file renamed over it, so no half-written file is left. */
function writeAtomically(path: string, body: string | Uint8Array): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, body, { mode: 0o600 });
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new UsageError(`cannot write ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/**
 * Run the CLI.
 *
 * @param argv arguments after the program name.
 * @returns the exit code.
 */
export function main(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): number {
  if (argv[0] === 'serve') {
    try {
      if (argv.length > 1) throw new UsageError(`unexpected argument: ${argv[1]!}`);
      const config = loadConfig();
      serve(config).catch((e: unknown) => {
        err.write(`cannot start: ${(e as Error).message}\n`);
        process.exit(1);
      });
      return 0;
    } catch (e) {
      err.write(`${(e as Error).message}\n`);
      return 2;
    }
  }
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        file: { type: 'string', short: 'f' },
        format: { type: 'string' },
        'ignition-version': { type: 'string' },
        platform: { type: 'string' },
        output: { type: 'string', short: 'o' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    const [command, ...rest] = positionals;
    if (values.help) {
      out.write(`${USAGE}\n`);
      return 0;
    }
    if (rest.length > 0) throw new UsageError(`unexpected argument: ${rest[0]!}`);
    if (command === 'validate') {
      // Valid means renderable: the request, and the node built from it in the format it
      // (or --format) asks for, so what render would refuse is refused here too.
      const req = readRequest(values.file, documentLimits(loadConfig()));
      const result = renderNodeBootstrap(req, values.format ? { format: values.format as OutputFormat } : {});
      for (const w of result.warnings) err.write(`warning: ${w}\n`);
      err.write(`${values.file ?? ''}: valid (${result.format}${result.ignitionVersion ? ` ${result.ignitionVersion}` : ''})\n`);
      return 0;
    }
    if (command !== 'render') throw new UsageError(command ? `unknown command: ${command}` : 'a command is required');
    if (values.format !== undefined && !(OUTPUT_FORMATS as readonly string[]).includes(values.format)) {
      throw new RequestError([{ path: '--format', message: `must be one of ${OUTPUT_FORMATS.join(', ')}` }]);
    }
    if (values.platform !== undefined && !(PLATFORMS as readonly string[]).includes(values.platform)) {
      throw new RequestError([{ path: '--platform', message: `must be one of ${PLATFORMS.join(', ')}` }]);
    }
    const req = readRequest(values.file, documentLimits(loadConfig()));
    const result = renderNodeBootstrap(req, {
      ...(values.format ? { format: values.format as OutputFormat } : {}),
      ...(values['ignition-version'] ? { ignitionVersion: values['ignition-version'], ignitionVersionField: '--ignition-version' } : {}),
      ...(values.platform ? { platform: values.platform as Platform, platformField: '--platform' } : {}),
    });
    if (values['ignition-version'] && result.format !== 'ignition') {
      throw new RequestError([{ path: '--ignition-version', message: 'applies only to --format ignition' }]);
    }
    for (const w of result.warnings) err.write(`warning: ${w}\n`);
    const payload = result.gzip ?? result.body;
    if (values.output) writeAtomically(values.output, payload);
    else out.write(payload);
    return 0;
  } catch (e) {
    if (e instanceof RequestError) {
      for (const p of e.problems) err.write(`${p.path ? `${p.path}: ` : ''}${p.message}\n`);
      return 2;
    }
    if (e instanceof ConfigError) {
      err.write(`${e.message}\n`);
      return 2;
    }
    if (e instanceof UsageError || (e as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      err.write(`${(e as Error).message}\n${USAGE}\n`);
      return 2;
    }
    err.write(`internal error: ${(e as Error).message}\n`);
    return 1;
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const code = main(process.argv.slice(2));
  if (code !== 0) process.exitCode = code;
}
