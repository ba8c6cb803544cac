// @ts-check
'use strict';
/**
 * The RPC protocol of this example: fixed 16-byte messages, one SEND each.
 *
 *   request:  u32 call id | u32 operation | f64 argument
 *   response: u32 call id | u32 status    | f64 result     (status 0: ok, 1: unknown operation)
 *
 * Little-endian. The call id comes back unchanged, so the client matches
 * every answer to its call and checks the result.
 */

/** Bytes of every message. */
const MSG = 16;

/** The operations the server knows, by number. */
const OPERATIONS = [
  (/** @type {number} */ x) => x * x, // 0: square
  (/** @type {number} */ x) => -x, //    1: negate
  (/** @type {number} */ x) => x + 1, // 2: increment
];

/**
 * @param {Buffer} buf
 * @param {number} at
 * @param {{ id: number, op: number, x: number }} call
 */
function writeRequest(buf, at, { id, op, x }) {
  buf.writeUInt32LE(id >>> 0, at);
  buf.writeUInt32LE(op, at + 4);
  buf.writeDoubleLE(x, at + 8);
}

/** @param {Buffer} buf @param {number} at */
function readRequest(buf, at) {
  return { id: buf.readUInt32LE(at), op: buf.readUInt32LE(at + 4), x: buf.readDoubleLE(at + 8) };
}

/**
 * The server's answer to one request, written at `at`.
 * @param {{ id: number, op: number, x: number }} request
 * @param {Buffer} buf
 * @param {number} at
 */
function writeAnswer(request, buf, at) {
  const fn = OPERATIONS[request.op];
  buf.writeUInt32LE(request.id >>> 0, at);
  buf.writeUInt32LE(fn ? 0 : 1, at + 4);
  buf.writeDoubleLE(fn ? fn(request.x) : NaN, at + 8);
}

/** @param {Buffer} buf @param {number} at */
function readAnswer(buf, at) {
  return { id: buf.readUInt32LE(at), status: buf.readUInt32LE(at + 4), result: buf.readDoubleLE(at + 8) };
}

/** What a correct server answers to `op(x)`. */
function expected(/** @type {number} */ op, /** @type {number} */ x) {
  return OPERATIONS[op](x);
}

module.exports = { MSG, OPERATIONS, writeRequest, readRequest, writeAnswer, readAnswer, expected };
