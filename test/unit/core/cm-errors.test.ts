import {
  AddressResolutionError,
  CM_ERROR_CODES,
  ConnectError,
  ConnectionRejectedError,
  ConnectTimeoutError,
  DeviceRemovedError,
  DisconnectedError,
  ListenerClosedError,
  RequestAnsweredError,
  RouteResolutionError,
  UnreachableError,
  cmEventName,
} from '../../../src/core';

const peer = { host: '198.18.0.2', port: 7471 };

describe('connection errors', () => {
  it('a reject by the application carries its reason and private data', () => {
    const err = new ConnectionRejectedError(28, new Uint8Array([1, 2, 3]), peer);
    expect([err.name, err.code, err.reason, err.reasonName, err.noListener]).toEqual([
      'ConnectionRejectedError', 'ERR_CM_REJECTED', 28, 'CONSUMER_REJECT', false,
    ]);
    expect(err.privateData).toEqual(new Uint8Array([1, 2, 3]));
    expect(err.peer).toEqual(peer);
    expect(err.message).toBe('Connection rejected by the peer 198.18.0.2:7471 (reason 28, CONSUMER_REJECT, 3 bytes of private data)');
  });

  it('a reject because nobody listens says so; IPv6 peers are bracketed', () => {
    const err = new ConnectionRejectedError(8, new Uint8Array(0), { host: 'fe80::1', port: 9 });
    expect(err.noListener).toBe(true);
    expect(err.message).toBe('Connection rejected: nobody listens on [fe80::1]:9 (reason 8, INVALID_SERVICE_ID)');
  });

  it('every error has its stable name and code', () => {
    const all = [
      [new UnreachableError(peer, -110), 'UnreachableError', CM_ERROR_CODES.UNREACHABLE],
      [new AddressResolutionError(peer), 'AddressResolutionError', CM_ERROR_CODES.ADDRESS],
      [new RouteResolutionError(peer), 'RouteResolutionError', CM_ERROR_CODES.ROUTE],
      [new ConnectError(peer), 'ConnectError', CM_ERROR_CODES.CONNECT],
      [new ConnectTimeoutError(250, peer), 'ConnectTimeoutError', CM_ERROR_CODES.TIMEOUT],
      [new DeviceRemovedError(), 'DeviceRemovedError', CM_ERROR_CODES.DEVICE_REMOVED],
      [new DisconnectedError('gone'), 'DisconnectedError', CM_ERROR_CODES.DISCONNECTED],
      [new RequestAnsweredError('accepted'), 'RequestAnsweredError', CM_ERROR_CODES.ANSWERED],
      [new ListenerClosedError(), 'ListenerClosedError', CM_ERROR_CODES.LISTENER_CLOSED],
    ] as const;
    for (const [err, name, code] of all) {
      expect(err).toBeInstanceOf(Error);
      expect([err.name, err.code]).toEqual([name, code]);
    }
    expect(new ConnectTimeoutError(250, peer).message).toBe('Connecting to 198.18.0.2:7471 timed out after 250 ms');
    expect(new UnreachableError(peer, -110).status).toBe(-110);
  });

  it('names CM events by librdmacm number', () => {
    expect([cmEventName(4), cmEventName(9), cmEventName(11), cmEventName(99)]).toEqual([
      'CONNECT_REQUEST', 'ESTABLISHED', 'DEVICE_REMOVAL', 'UNKNOWN',
    ]);
  });
});
