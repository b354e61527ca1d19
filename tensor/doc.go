// Package tensor owns dainx's sparse tensor data: the in-memory COO
// (coordinate) representation, reading and writing tensor files, the
// seeded train/validation/test split of observed cells (step 0 of DAIN) and
// a cell set used for rejection sampling of unobserved cells.
//
// # Formats
//
// A text tensor file holds one observed cell per line: N integer indices
// (one per mode) followed by a float value. Two text formats are supported:
//
//   - TSV, DAIN's own format: tab-separated 0-based indices, then the value,
//     e.g. "290\t362\t407\t2.292604".
//   - TNS, the FROSTT .tns format: whitespace-separated 1-based indices, then
//     the value, e.g. "291 363 408 2.292604"; lines whose first non-blank
//     character is '#' are comments.
//
// The reader is lenient in the same way for both: fields may be separated by
// any run of spaces and tabs, blank lines and '#' comment lines are skipped,
// and a trailing '\r' is ignored. The two formats therefore differ only in
// their default index base (TSV 0, TNS 1) and in the separator Write uses.
// Input compressed with gzip is detected by its content (magic bytes), not by
// the file name; WriteFile compresses when the path ends in ".gz".
//
// The order N is fixed by the first data line, at most MaxOrder (1024):
// a first line of more fields is refused before anything is sized by it,
// and a later line's fields are only counted. The mode sizes are not stored
// in the file: Dims[n] is the largest index of mode n plus one, exactly as
// DAIN's loader computes it. Every index must fit in int32 (at most 2^31-2,
// so that Dims fits in int32 as well).
//
// Text is parsed on all cores: a reader cuts the input into blocks of whole
// lines, goroutines parse them, and the cells are joined in file order. The
// result, and on bad input the error (the first bad line in file order), are
// exactly those of a line-by-line parse.
//
// The third format, BIN, is SPLATT's binary coordinate format (.bin, as
// written by "splatt convert" and read by SPLATT's tt_read_binary_file), all
// little-endian, without padding:
//
//	int32            magic       0 (SPLATT_BIN_COORD)
//	uint64           idx_width   4 or 8
//	uint64           val_width   4 (float32) or 8 (float64)
//	idx              nmodes      the order N (1..1024 accepted)
//	idx              dims[N]     the mode sizes (1..2^31-1 accepted)
//	idx              nnz         the number of cells (at least 1)
//	idx              ind[N][nnz] the indices mode by mode: all of mode 1, then mode 2, …
//	val              vals[nnz]   the values
//
// where idx is an unsigned integer of idx_width bytes. Indices are 0-based
// (SPLATT's convention; IndexBase overrides it as for text), and Dims are
// the stored mode sizes, so every index must be below its mode's size. The
// file must be exactly as long as its header says. Writing chooses the
// widths as SPLATT does: 4-byte indices unless there are 2^32-1 cells or
// more, 4-byte values when every value is exactly a float32, else 8; the
// file is lossless.
//
// # Errors
//
// Bad input (a malformed line, a non-integer or negative index, a NaN or
// infinite value, a duplicate cell, an empty tensor, a corrupt or truncated
// gzip stream, reported after the last whole line, never as the line it cut)
// is reported as a *ParseError naming the file and, when the problem is on a
// line, its 1-based line number (an empty tensor or a corrupt gzip stream has
// line 0); reading never panics on bad input. Bad .bin input (a wrong magic
// number, an unsupported width, a header out of range, a file shorter or
// longer than its header says, with both sizes, an index outside its mode's
// size or a non-finite value, with the cell's number counted from 1, the mode
// and the byte offset, a duplicate cell, with both cell numbers) is a
// *ParseError with line 0. A file that cannot be opened
// gives the *fs.PathError from os.Open. Writing refuses an invalid COO (see
// COO.Validate) before writing anything, and WriteFile never leaves a
// partially written file behind. Misuse by the caller (a row number out of
// range, a cell of the wrong order or outside the dims passed to a CellSet,
// split fractions outside [0, 1]) is a programming error and panics.
package tensor
