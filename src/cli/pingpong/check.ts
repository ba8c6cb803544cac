/**
 * `-c` (`--chk`), as rdma-core's pingpongs validate the received buffer, so
 * that ours and theirs agree on it in either role: before its first send the
 * client writes, at the start of each page of the payload, the byte
 * `page % sizeof(char)` (0 for every page: the programs' own formula); after
 * the run the server reads those bytes back and prints a line for each page
 * whose byte is not 0. Everything else in the buffer keeps its 0x7b fill, so
 * a server with `-c` whose client does not mark its pages sees 0x7b and
 * reports every page.
 */

/**
 * The page size the programs step by (`sysconf(_SC_PAGESIZE)`): 4 KiB on
 * the Linux platforms rdma-core's packages build for (x86-64, and arm64 with
 * its default kernel); Node does not expose the value, and both peers must
 * step alike for their checks to agree.
 */
export const CHECK_PAGE = 4096;

/** The byte the client writes at each page start: `page % sizeof(char)`, always 0. */
const MARK = 0;

/** The client's marks: the first byte of each page of the `size`-byte payload at `offset`. */
export function fillPages(buf: Buffer, offset: number, size: number): void {
  for (let i = 0; i < size; i += CHECK_PAGE) buf[offset + i] = MARK;
}

/** The server's verdict: one `invalid data in page N` line (the programs' wording) per page not marked. */
export function invalidPages(buf: Buffer, offset: number, size: number): string[] {
  const lines: string[] = [];
  for (let i = 0; i < size; i += CHECK_PAGE) {
    if (buf[offset + i] !== MARK) lines.push(`invalid data in page ${i / CHECK_PAGE}`);
  }
  return lines;
}
