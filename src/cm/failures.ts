import type { CmAddress, CmEvent } from '../core/cm';
import {
  AddressResolutionError,
  ConnectError,
  ConnectionRejectedError,
  DeviceRemovedError,
  DisconnectedError,
  RouteResolutionError,
  UnreachableError,
} from '../core/cm-errors';

/** The typed error a failure event means during set-up; undefined for events that are not failures. */
export function setupFailure(e: CmEvent, peer: CmAddress | undefined): Error | undefined {
  switch (e.type) {
    case 'REJECTED':
      return new ConnectionRejectedError(e.status, e.privateData, peer);
    case 'UNREACHABLE':
      return new UnreachableError(peer, e.status);
    case 'ADDR_ERROR':
      return new AddressResolutionError(peer, e.status);
    case 'ROUTE_ERROR':
      return new RouteResolutionError(peer, e.status);
    case 'CONNECT_ERROR':
      return new ConnectError(peer, e.status);
    case 'DEVICE_REMOVAL':
      return new DeviceRemovedError(peer);
    case 'DISCONNECTED':
      return new DisconnectedError(`The connection${peer ? ` to ${peer.host}:${peer.port}` : ''} ended before it was established`, peer);
    default:
      return undefined;
  }
}
