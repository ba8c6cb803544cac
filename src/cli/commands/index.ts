/**
 * The commands of `rx-verbs`, by name. Each lives in its own folder under
 * src/cli.
 */
import { bench } from '../bench/command';
import { demo } from '../demo/command';
import { devices } from '../devices/command';
import { nc } from '../nc/command';
import { pingpong } from '../pingpong/command';
import { rdmaClient, rdmaServer } from '../rdma-pair/command';
import { rping } from '../rping/command';
import type { Command } from '../shared/command';

export type { Command } from '../shared/command';

/** Every subcommand, by name, in the order `rx-verbs --help` lists them. */
export const COMMANDS: Record<string, Command> = {
  devices,
  demo,
  pingpong,
  rping,
  'rdma-server': rdmaServer,
  'rdma-client': rdmaClient,
  nc,
  bench,
};
