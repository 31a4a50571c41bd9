/** The cloud-init provisioner: Linux nodes, `#cloud-config` (`./render.ts`). */
import type { Provisioner } from '../provisioner.js';
import { CLOUD_CONFIG_FORMAT } from './format.js';
import { NETWORK_NOT_IN_USER_DATA } from './network.js';
import { renderCloudConfig } from './render.js';

/**
 * cloud-config for cloud-init. The plan's additional Ignition config has no cloud-config
 * form: as Cluster API's kubeadm bootstrap provider, it is ignored, with a warning.
 */
export const CLOUD_INIT_PROVISIONER: Provisioner = {
  name: 'cloud-init',
  format: CLOUD_CONFIG_FORMAT,
  os: 'linux',
  default: true,
  render(plan) {
    const body = renderCloudConfig(plan);
    // Cluster API's kubeadm bootstrap provider ignores `ignition` for cloud-config too.
    const warnings = plan.ignition ? [`${plan.ignition.origin} is ignored: it applies to Ignition output only`] : [];
    // cloud-init reads network configuration from its datasource, never from user data.
    if (plan.network) warnings.push(NETWORK_NOT_IN_USER_DATA);
    return { body, warnings };
  },
};
