import { describe, expect, it } from "@effect/vitest"
import { Blowfish, MAX_EFFECTIVE_KEY_BYTES, P_INIT, S_INIT } from "../../../src/services/crypto/Blowfish.js"

const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, "hex"))
const toHex = (b: Uint8Array): string => Buffer.from(b).toString("hex").toUpperCase()

// Eric Young's known-answer vectors as published by Bruce Schneier,
// https://www.schneier.com/code/vectors.txt, section "ecb test data (taken from the DES
// validation tests)": all 34 rows in file order, including the repeated all-zero row 7.
// Columns: key bytes, clear bytes, cipher bytes.
const ECB_VECTORS: ReadonlyArray<readonly [string, string, string]> = [
  ["0000000000000000", "0000000000000000", "4EF997456198DD78"],
  ["FFFFFFFFFFFFFFFF", "FFFFFFFFFFFFFFFF", "51866FD5B85ECB8A"],
  ["3000000000000000", "1000000000000001", "7D856F9A613063F2"],
  ["1111111111111111", "1111111111111111", "2466DD878B963C9D"],
  ["0123456789ABCDEF", "1111111111111111", "61F9C3802281B096"],
  ["1111111111111111", "0123456789ABCDEF", "7D0CC630AFDA1EC7"],
  ["0000000000000000", "0000000000000000", "4EF997456198DD78"],
  ["FEDCBA9876543210", "0123456789ABCDEF", "0ACEAB0FC6A0A28D"],
  ["7CA110454A1A6E57", "01A1D6D039776742", "59C68245EB05282B"],
  ["0131D9619DC1376E", "5CD54CA83DEF57DA", "B1B8CC0B250F09A0"],
  ["07A1133E4A0B2686", "0248D43806F67172", "1730E5778BEA1DA4"],
  ["3849674C2602319E", "51454B582DDF440A", "A25E7856CF2651EB"],
  ["04B915BA43FEB5B6", "42FD443059577FA2", "353882B109CE8F1A"],
  ["0113B970FD34F2CE", "059B5E0851CF143A", "48F4D0884C379918"],
  ["0170F175468FB5E6", "0756D8E0774761D2", "432193B78951FC98"],
  ["43297FAD38E373FE", "762514B829BF486A", "13F04154D69D1AE5"],
  ["07A7137045DA2A16", "3BDD119049372802", "2EEDDA93FFD39C79"],
  ["04689104C2FD3B2F", "26955F6835AF609A", "D887E0393C2DA6E3"],
  ["37D06BB516CB7546", "164D5E404F275232", "5F99D04F5B163969"],
  ["1F08260D1AC2465E", "6B056E18759F5CCA", "4A057A3B24D3977B"],
  ["584023641ABA6176", "004BD6EF09176062", "452031C1E4FADA8E"],
  ["025816164629B007", "480D39006EE762F2", "7555AE39F59B87BD"],
  ["49793EBC79B3258F", "437540C8698F3CFA", "53C55F9CB49FC019"],
  ["4FB05E1515AB73A7", "072D43A077075292", "7A8E7BFA937E89A3"],
  ["49E95D6D4CA229BF", "02FE55778117F12A", "CF9C5D7A4986ADB5"],
  ["018310DC409B26D6", "1D9D5C5018F728C2", "D1ABB290658BC778"],
  ["1C587F1C13924FEF", "305532286D6F295A", "55CB3774D13EF201"],
  ["0101010101010101", "0123456789ABCDEF", "FA34EC4847B268B2"],
  ["1F1F1F1F0E0E0E0E", "0123456789ABCDEF", "A790795108EA3CAE"],
  ["E0FEE0FEF1FEF1FE", "0123456789ABCDEF", "C39E072D9FAC631D"],
  ["0000000000000000", "FFFFFFFFFFFFFFFF", "014933E0CDAFF6E4"],
  ["FFFFFFFFFFFFFFFF", "0000000000000000", "F21E9A77B71C49BC"],
  ["0123456789ABCDEF", "0000000000000000", "245946885754369A"],
  ["FEDCBA9876543210", "FFFFFFFFFFFFFFFF", "6B5C5A9C5D9E0A5A"]
]

// Same file, section "set_key test data" (variable key length): data[8] = FEDCBA9876543210
// under the first k bytes of F0E1D2C3B4A5968778695A4B3C2D1E0F0011223344556677, k = 1..24.
// Columns: k, cipher bytes.
const SET_KEY_DATA = "FEDCBA9876543210"
const SET_KEY_MATERIAL = "F0E1D2C3B4A5968778695A4B3C2D1E0F0011223344556677"
const SET_KEY_VECTORS: ReadonlyArray<readonly [number, string]> = [
  [1, "F9AD597C49DB005E"],
  [2, "E91D21C1D961A6D6"],
  [3, "E9C2B70A1BC65CF3"],
  [4, "BE1E639408640F05"],
  [5, "B39E44481BDB1E6E"],
  [6, "9457AA83B1928C0D"],
  [7, "8BB77032F960629D"],
  [8, "E87A244E2CC85E82"],
  [9, "15750E7A4F4EC577"],
  [10, "122BA70B3AB64AE0"],
  [11, "3A833C9AFFC537F6"],
  [12, "9409DA87A90F6BF2"],
  [13, "884F80625060B8B4"],
  [14, "1F85031C19E11968"],
  [15, "79D9373A714CA34F"],
  [16, "93142887EE3BE15C"],
  [17, "03429E838CE2D14B"],
  [18, "A4299E27469FF67B"],
  [19, "AFD5AED1C1BC96A8"],
  [20, "10851C0E3858DA9F"],
  [21, "E6F51ED79B9DB21F"],
  [22, "64A6E14AFD36B46F"],
  [23, "80C7D7D45A5479AD"],
  [24, "05044B62FA52D080"]
]

// Same file, section "chaining mode test data": key[16], iv[8] and the 29-byte string
// "7654321 Now is the time for " with its trailing NUL, zero-padded to 32 bytes for CBC.
const CHAIN_KEY = "0123456789ABCDEFF0E1D2C3B4A59687"
const CHAIN_IV = "FEDCBA9876543210"
const CHAIN_DATA = "37363534333231204E6F77206973207468652074696D6520666F722000000000"
const CHAIN_CBC = "6B77B4D63006DEE605B156E27403979358DEB9E7154616D959F1652BD5FF92CC"

// Keys longer than vectors.txt covers. Expected blocks were produced by OpenSSL 3.0.19's own
// BF_set_key + BF_ecb_encrypt (called from Python through ctypes on libcrypto.so.3), the calls
// that HexChat's FiSHLiM and FiSH-irssi make; they show OpenSSL reads only the first 72 key
// bytes. Key byte i is (0x11 * i + 7) & 0xff; the clear block is FEDCBA9876543210.
const LONG_KEY_VECTORS: ReadonlyArray<readonly [number, string]> = [
  [56, "A9E77E2F4E9699A6"],
  [57, "1C48C64191BD2B21"],
  [64, "6288ED0886EB1AD2"],
  [71, "B480A3630DAAC1FB"],
  [72, "87AFB71CC4202C8D"],
  [73, "87AFB71CC4202C8D"],
  [80, "87AFB71CC4202C8D"],
  [100, "87AFB71CC4202C8D"]
]
const longKey = (n: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (0x11 * i + 7) & 0xff)

// The initial P-array and S-boxes are pi's fractional hex digits. Recompute them with
// Machin's formula, pi = 16 atan(1/5) - 4 atan(1/239), in fixed point with 64 guard bits.
const piWords = (count: number): ReadonlyArray<number> => {
  const guard = 64n
  const one = 1n << (BigInt(count * 32) + guard)
  const atanInverse = (x: bigint): bigint => {
    const x2 = x * x
    let term = one / x
    let sum = term
    let k = 1n
    let negative = true
    while (term !== 0n) {
      term /= x2
      k += 2n
      sum += negative ? -(term / k) : term / k
      negative = !negative
    }
    return sum
  }
  const pi = 16n * atanInverse(5n) - 4n * atanInverse(239n)
  const fraction = (pi - 3n * one) >> guard
  const digits = fraction.toString(16).padStart(count * 8, "0")
  return Array.from({ length: count }, (_, i) => Number.parseInt(digits.slice(i * 8, i * 8 + 8), 16))
}

describe("Blowfish", () => {
  it("starts from the hexadecimal digits of pi", () => {
    const words = piWords(P_INIT.length + S_INIT.length)
    expect(P_INIT).toHaveLength(18)
    expect(S_INIT).toHaveLength(1024)
    expect([...P_INIT, ...S_INIT]).toEqual(words)
  })

  it.each(ECB_VECTORS.map(([key, clear, cipher], i) => ({ row: i + 1, key, clear, cipher })))(
    "vectors.txt ecb row $row: key $key",
    ({ key, clear, cipher }) => {
      const bf = new Blowfish(hex(key))
      const encrypted = bf.encryptBlock(hex(clear))
      expect(toHex(encrypted)).toBe(cipher)
      expect(toHex(bf.decryptBlock(encrypted))).toBe(clear)
    }
  )

  it.each(SET_KEY_VECTORS.map(([k, cipher]) => ({ k, cipher })))(
    "vectors.txt set_key: $k-byte key",
    ({ k, cipher }) => {
      const bf = new Blowfish(hex(SET_KEY_MATERIAL).subarray(0, k))
      expect(toHex(bf.encryptBlock(hex(SET_KEY_DATA)))).toBe(cipher)
      expect(toHex(bf.decryptBlock(hex(cipher)))).toBe(SET_KEY_DATA)
    }
  )

  it("vectors.txt chaining mode: CBC", () => {
    const bf = new Blowfish(hex(CHAIN_KEY))
    const encrypted = bf.encryptCbc(hex(CHAIN_IV), hex(CHAIN_DATA))
    expect(toHex(encrypted)).toBe(CHAIN_CBC)
    expect(toHex(bf.decryptCbc(hex(CHAIN_IV), encrypted))).toBe(CHAIN_DATA)
  })

  it("ECB over several blocks is the single-block cipher applied to each block", () => {
    const bf = new Blowfish(hex(CHAIN_KEY))
    const data = hex(CHAIN_DATA)
    const encrypted = bf.encryptEcb(data)
    for (let o = 0; o < data.length; o += 8) {
      expect(toHex(encrypted.subarray(o, o + 8))).toBe(toHex(bf.encryptBlock(data.subarray(o, o + 8))))
    }
    expect(toHex(bf.decryptEcb(encrypted))).toBe(CHAIN_DATA)
  })

  it.each(LONG_KEY_VECTORS.map(([n, cipher]) => ({ n, cipher })))(
    "matches OpenSSL BF_set_key for a $n-byte key",
    ({ n, cipher }) => {
      expect(toHex(new Blowfish(longKey(n)).encryptBlock(hex("FEDCBA9876543210")))).toBe(cipher)
    }
  )

  it("ignores key bytes past the 72nd, as OpenSSL does", () => {
    const block = hex("0123456789ABCDEF")
    const base = toHex(new Blowfish(longKey(MAX_EFFECTIVE_KEY_BYTES)).encryptBlock(block))
    const longer = Uint8Array.from([...longKey(MAX_EFFECTIVE_KEY_BYTES), 1, 2, 3])
    expect(toHex(new Blowfish(longer).encryptBlock(block))).toBe(base)
  })

  it("does not modify its input", () => {
    const bf = new Blowfish(hex("0123456789ABCDEF"))
    const block = hex("1111111111111111")
    bf.encryptBlock(block)
    bf.encryptCbc(hex(CHAIN_IV), block)
    expect(toHex(block)).toBe("1111111111111111")
  })

  it("refuses an empty key, partial blocks and bad offsets", () => {
    expect(() => new Blowfish(new Uint8Array(0))).toThrow(RangeError)
    const bf = new Blowfish(hex("00"))
    expect(() => bf.encryptBlock(new Uint8Array(7))).toThrow(RangeError)
    expect(() => bf.decryptBlock(new Uint8Array(9))).toThrow(RangeError)
    expect(() => bf.encryptEcb(new Uint8Array(12))).toThrow(RangeError)
    expect(() => bf.encryptCbc(new Uint8Array(4), new Uint8Array(8))).toThrow(RangeError)
    expect(() => bf.encryptBlockAt(new Uint8Array(16), 9)).toThrow(RangeError)
    expect(() => bf.decryptBlockAt(new Uint8Array(16), -1)).toThrow(RangeError)
  })
})
