// Package reframe converts the frames of a Minecraft stream from one
// side's compression threshold to another's, for a login the proxy
// completes whose client is told a threshold (compression_threshold) other
// than the backend's.
//
// After Set Compression a frame is VarInt frame length | VarInt data
// length | payload, data length 0 meaning the payload is the plain packet
// (ID and data) and otherwise the zlib stream of a packet that size; a side
// without compression sends VarInt length | packet. Per frame, a Codec
// reads the packet from the reading side's format (inflating it, bounded by
// the protocol's limit: 2^21 bytes serverbound, 8 MiB clientbound, as
// vanilla enforces) and writes it in the other's: plain under the
// threshold (with the data length 0 marker when that side compresses),
// deflated at or above it. A frame already in the form the other side
// wants (both compress, and the packet is on the same side of both
// thresholds) is checked and copied unchanged, so the common case costs an
// inflate, not a deflate.
//
// A Codec is one event loop's scratch: one zlib writer and reader, reset
// per frame, and one output buffer, shared by every re-framed session of
// the loop; a session keeps only its two Directions. A Codec reads whole
// frames only: a frame cut by the end of a read stays in the connection's
// input, and with an encrypted source (online mode) it stays ciphertext,
// the decrypter standing at its start (Convert).
package reframe
