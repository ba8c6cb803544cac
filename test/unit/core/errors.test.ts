import { BufferOverflowError, CqOverrunError, DeviceFatalError, WorkCompletionError } from '../../../src/core/errors';
import { WcBatch } from '../../../src/core/wc-batch';

describe('typed errors', () => {
  it('WorkCompletionError words the status like ibv_wc_status_str', () => {
    const batch = WcBatch.from([{ wrId: 1 }, { wrId: 0x1_0000_0001n, status: 5, qpNum: 3, vendorErr: 0x244 }]);
    const err = WorkCompletionError.fromBatch(batch, 1);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('WorkCompletionError');
    expect(err.code).toBe('ERR_WORK_COMPLETION');
    expect(err.status).toBe('WR_FLUSH_ERR');
    expect(err.statusCode).toBe(5);
    expect(err.batch).toBe(batch);
    expect(err.message).toBe(
      'Work completion failed: Work Request Flushed Error (WR_FLUSH_ERR) for wr_id 4294967297 on QP 3, vendor error 0x244',
    );
    expect(() => WorkCompletionError.fromBatch(batch, 5)).toThrow(RangeError);
  });

  it('WorkCompletionError from a plain completion finds the status number', () => {
    const wc = WcBatch.from([{ wrId: 9, status: 12 }]).at(0)!;
    const err = new WorkCompletionError(wc);
    expect(err.statusCode).toBe(12);
    expect(err.index).toBeUndefined();
  });

  it('the others carry name, code and their details', () => {
    const overrun = new CqOverrunError(undefined, { cqe: 16 });
    expect([overrun.name, overrun.code, overrun.cqe]).toEqual(['CqOverrunError', 'ERR_CQ_OVERRUN', 16]);
    const cause = new Error('EIO');
    const fatal = new DeviceFatalError('gone', { device: 'soft0', cause });
    expect([fatal.name, fatal.code, fatal.device, fatal.cause]).toEqual(['DeviceFatalError', 'ERR_DEVICE_FATAL', 'soft0', cause]);
    const overflow = new BufferOverflowError(8);
    expect(overflow).toBeInstanceOf(RangeError);
    expect([overflow.name, overflow.code, overflow.highWaterMark]).toEqual(['BufferOverflowError', 'ERR_BUFFER_OVERFLOW', 8]);
  });
});
