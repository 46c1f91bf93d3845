/**
 * Types for the part of http_ece 1.2 (CommonJS, ships no types; RFC 8188 by one of its authors) that IrcPush.ts uses,
 * read from node_modules/http_ece/ece.js. Declarations only; `encrypt` is synchronous.
 *
 * Usage under NodeNext: `import ece from "http_ece"` then `ece.encrypt(content, {...})`.
 *
 * Pitfalls the types cannot express (verified in the source):
 * - String keys and secrets (`dh`, `authSecret`, `salt`) are read as base64url; Buffers as they are.
 * - With `privateKey` and no `keyid`, aes128gcm puts the sender's public key in the header (RFC 8291 §4).
 * - `pad` is the total of zero bytes after the delimiter, spread over records; `rs` defaults to 4096.
 */
declare module "http_ece" {
  import type { ECDH } from "node:crypto"

  export interface EncryptParams {
    readonly version?: "aes128gcm" | "aesgcm"
    /** The receiver's P-256 public key (uncompressed point). */
    readonly dh?: string | Buffer
    /** The sender's key pair (`crypto.createECDH("prime256v1")` with keys generated). */
    readonly privateKey?: ECDH
    /** The receiver's authentication secret (RFC 8291 §3.2). */
    readonly authSecret?: string | Buffer
    readonly salt?: string | Buffer
    readonly keyid?: string | Buffer
    /** Record size (RFC 8188 §2). */
    readonly rs?: number
    /** Zero bytes of padding in all. */
    readonly pad?: number
  }

  const ece: {
    encrypt(buffer: Buffer, params: EncryptParams): Buffer
    decrypt(buffer: Buffer, params: EncryptParams): Buffer
  }
  export default ece
}
