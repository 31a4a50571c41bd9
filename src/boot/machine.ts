/**
 * A stored machine's iPXE script, as `/ipxe` serves it and as a write is checked against
 * (src/store/writecheck.ts): the profile's `boot` section, the machine's `kernelArgs`,
 * the signed URL's arguments and the network's (./network.ts), with the boot variables
 * filled in. One function, so what is checked when written is what boots.
 */
import { machineNetwork } from '../store/assemble.js';
import type { MachineSpec, ProfileSpec } from '../store/resources.js';
import { bootFormat, type BootVariables, machineScript, provisioningArgs } from './ipxe.js';
import { networkBootArgs } from './network.js';

/** The machine values a boot script uses. */
export type BootMachine = Pick<MachineSpec, 'network' | 'kernelArgs' | 'variables'>;

/**
 * The boot script of `machine` with `profile` (which must have a `boot` section).
 *
 * @param machine the machine's name and values, or undefined for a profile checked on its
 *   own (every well-formed `${name}` accepted, ipxe.ts {@link BootVariables} `own: 'any'`)
 * @param url the signed bootstrap URL (sign.ts `bootstrapUrl`)
 * @param publicUrl the service's public base URL (`${publicUrl}`; signed URLs use it too)
 * @param scriptBase where iPXE reached the service (kernel and initrd references resolve against it)
 * @throws RequestError (422) listing every problem (ipxe.ts `machineScript`)
 */
export function storedMachineScript(
  profile: ProfileSpec & { boot: NonNullable<ProfileSpec['boot']> },
  machine: { name: string; spec: BootMachine } | undefined,
  url: string,
  publicUrl: string,
  scriptBase: string,
): string {
  const format = bootFormat(profile.output?.format);
  const network = machineNetwork(machine?.spec, profile);
  const vars: BootVariables = { publicUrl: publicUrl.replace(/\/+$/, ''), machine: machine?.name ?? 'placeholder', own: machine ? (machine.spec.variables ?? {}) : 'any' };
  return machineScript(profile.boot, [...provisioningArgs(format, url), ...networkBootArgs(format, network)], scriptBase, undefined, {
    ...(machine?.spec.kernelArgs ? { kernelArgs: machine.spec.kernelArgs } : {}),
    vars,
  });
}
