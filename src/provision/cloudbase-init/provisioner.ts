/** The cloudbase-init provisioner: Windows nodes, `#cloud-config` read by cloudbase-init (`./render.ts`). */
import { CLOUD_CONFIG_FORMAT } from '../cloudinit/format.js';
import type { Provisioner } from '../provisioner.js';
import { renderCloudbaseInit } from './render.js';

/**
 * cloud-config for cloudbase-init on Windows nodes, as CABPK serves them. cloudbase-init
 * decompresses user data that starts with the gzip magic bytes (`UserDataPlugin`
 * `_check_gzip_compression`), so an over-limit document may go gzip-compressed whole.
 * The additional Ignition config is ignored with a warning, as for cloud-init.
 */
export const CLOUDBASE_INIT_PROVISIONER: Provisioner = {
  name: 'cloudbase-init',
  format: CLOUD_CONFIG_FORMAT,
  os: 'windows',
  default: true,
  userData: { noun: 'cloud-config', reader: 'cloudbase-init', gzip: true },
  render(plan) {
    const body = renderCloudbaseInit(plan);
    const warnings = plan.ignition ? [`${plan.ignition.origin} is ignored: it applies to Ignition output only`] : [];
    return { body, warnings };
  },
};
