package payload

// CDChunk is the central directory walk's read size, for the tests that
// put records across a chunk's end.
const CDChunk = cdChunk
