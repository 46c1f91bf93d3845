import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck, Redacted } from "effect"
import { Blowfish } from "../../../src/services/crypto/Blowfish.js"
import {
  CTCP_ACTION_OVERHEAD_BYTES,
  DEFAULT_FISH_MODE,
  type FishKey,
  type FishMode,
  IRC_MAX_LINE_BYTES,
  fishBase64Decode,
  fishBase64Encode,
  fishDecrypt,
  fishEncrypt,
  fishPayloadBytes,
  formatFishKey,
  isFishPayload,
  maxPlaintextBytesForLine,
  parseFishKey,
  privmsgOverheadBytes,
  splitForFish
} from "../../../src/services/crypto/Fish.js"

const key = (raw: string): FishKey => Either.getOrThrow(parseFishKey(raw))
const bytes = (s: string): number => new TextEncoder().encode(s).length
const fixedIv = (hex: string) => () => Uint8Array.from(Buffer.from(hex, "hex"))

const QUICK_FOX = "The quick brown fox jumps over the lazy dog"
const AUTOSWITCH =
  "Automatically switch to any channel you are joined to that receives a new user message. The addin will switch servers as well if the channel with activity is on a different server view.To stop automatically switching at any time send the command /stay in a channel."

// mpolden/fish, fish_test.go (Test_Encrypt, Test_Decrypt_OkPrefix, Test_Decrypt_McpsPrefix):
// ECB, key "unladen swallow". The same string is in synfron/FiSH, FiSHTests/FishTests.cs
// (EcbEncrypt/EcbDecrypt), and OpenSSL 3.0.19's BF_ecb_encrypt reproduces it.
const ECB_FOX = "+OK zT/uX.Z4Q3A/G4YzZ02hMhT1mAsBo.iVKz71YPSQz/trfT4/srrS611D5Qz.cnm/71snKIp0"

// synfron/FiSH, FiSHTests/FishTests.cs, EcbEncrypt/EcbDecrypt second row: key "123456781234567812345".
const ECB_AUTOSWITCH =
  "+OK KKI7d/iGdDj/EX3.u.s8Ned0257v903M9EP16EspO.FOWkX/t/5SK.1xZ.h.tln8D0Xdl5H00.Gqr.iBxtG/9bHwH0.mCrD.jfwmN0ibMvz.waDvm0POIlj.fc6dA1Fmz2I.VQbim/pc3EF1HDGJK1PRF9z1qCiQ11UADif1KKeMs0WQHDn1ee9eV/SQabp0vKCs8/3ossY1JzbOP1FFBxO.SyAjj1AzH0X/exDqZ00Wikc0RgqgS1ravYE.tg85Y/5XsW70JANk7.ul40Q.FxhPL/.xDW21NsdvD0KxeoT1s8TjL1QIf0M.TwZzy0QH.U11Byzm4.QjF2Z1OQj6F.gV/Ww/GVFQY07JoYk0exTpB.bu4y5.3sMrm10NQTK.KFr0z.Irpqs/Kf8J50Cqa56."

// synfron/FiSH, FiSHTests/FishTests.cs, CbcDecrypt: messages another implementation sent in
// CBC with its own random IVs.
const CBC_FOX = "+OK *C/Tewfid2vcfWq0YpmVwnGMflO79MbkjHcOxW1T384H0lpP4PAf3bY1ctRjM+rPZmJkhf0GCtiE="
const CBC_AUTOSWITCH =
  "+OK *+JXLiMH79ZNZu49aKbY+VuuEMOCN1F6ZQ4QNMwxufw6hN6svepvfGb6l+s7+vVElVpYAThsy9MW8OxpiEO3iKepGW2tEZeicNoikG77d2phf2O+y3MrsAR0z7Iob/dqFkE0TtcKDU5aW1+UGL3hC44/FXkz6+twrDFDyQ5QXuVPXDn3dG7ep9WNBAhm+S76l2muZz6PGBbrcW+b/mWxBL9GiEfPZ361hKZgO5z9t/gqTwhBa85UPD5W0WdYxKT6I1K2GWzwE6iWRlZbtCfjf66PKbgf8Ea+nBeZNdytwVIY+AvDrXOFTuiv/VwmkyCH46WZw6VAZMmf71+Be98YoGzFaushw8l/sIs00OXvffeAUQWbdNP93mw=="

// Made with OpenSSL 3.0.19's BF_set_key + BF_cbc_encrypt / BF_ecb_encrypt (the calls FiSHLiM
// and FiSH-irssi make), driven from Python through ctypes, with the IVs given here and the
// FiSH framing of FiSHLiM fish_encrypt / fish.py blowcrypt_pack; they pin the exact output
// for UTF-8 keys and text.
const OPENSSL_VECTORS: ReadonlyArray<{ name: string; key: string; iv: string; text: string; payload: string }> = [
  {
    name: "CBC, ASCII",
    key: "cbc:unladen swallow",
    iv: "0001020304050607",
    text: QUICK_FOX,
    payload: "+OK *AAECAwQFBgc1YBuPrMyx9yXPx1jKyEY2RlUg4TV6opRF4UcSARz1Xo6JrwcHw3WKnmOaY1gACjQ="
  },
  {
    name: "CBC, UTF-8 key and text",
    key: "cbc:cbc key ☃",
    iv: "F0E1D2C3B4A59687",
    text: "héllo wörld 👋🏽 — ok",
    payload: "+OK *8OHSw7SlloflW+cdShbud1BY1Bhtw5bWxsllQiZy+miUA8+Y25OxIQ=="
  },
  {
    name: "ECB, UTF-8 key and text",
    key: "ecb:ecb ключ",
    iv: "0000000000000000",
    text: "naïve café ☕ 日本語",
    payload: "+OK pawIJ0YomlZ1ARAsU.9Rplp0vz51a/vdFQ.1cjTIr.WLuzj."
  }
]

describe("parseFishKey", () => {
  it.each([
    { raw: "secret", mode: DEFAULT_FISH_MODE, secret: "secret" },
    { raw: "cbc:secret", mode: "cbc", secret: "secret" },
    { raw: "CBC:secret", mode: "cbc", secret: "secret" },
    { raw: "ecb:secret", mode: "ecb", secret: "secret" },
    { raw: "Ecb:secret", mode: "ecb", secret: "secret" },
    { raw: "cbc:cbc:x", mode: "cbc", secret: "cbc:x" },
    { raw: " spaced key ", mode: "ecb", secret: " spaced key " },
    { raw: "cbckey", mode: "ecb", secret: "cbckey" },
    { raw: "ключ☃", mode: "ecb", secret: "ключ☃" }
  ])("$raw → $mode", ({ raw, mode, secret }) => {
    const parsed = key(raw)
    expect(parsed.mode).toBe(mode)
    expect(Redacted.value(parsed.secret)).toBe(secret)
    expect(Either.getOrThrow(parseFishKey(formatFishKey(parsed)))).toMatchObject({ mode })
    expect(Redacted.value(key(formatFishKey(parsed)).secret)).toBe(secret)
  })

  it("defaults a bare key to ECB, as FiSHLiM and fish.py do", () => {
    expect(DEFAULT_FISH_MODE).toBe("ecb")
    expect(formatFishKey(key("hunter2"))).toBe("ecb:hunter2")
  })

  it.each([
    { raw: "", reason: "empty" },
    { raw: "cbc:", reason: "empty" },
    { raw: "ECB:", reason: "empty" },
    { raw: "two\nlines", reason: "control-character" },
    { raw: "cbc:carriage\r", reason: "control-character" },
    { raw: "nul\0byte", reason: "control-character" }
  ])("refuses $raw ($reason)", ({ raw, reason }) => {
    const parsed = parseFishKey(raw)
    expect(Either.isLeft(parsed)).toBe(true)
    if (Either.isLeft(parsed)) {
      expect(parsed.left._tag).toBe("InvalidFishKey")
      expect(parsed.left.reason).toBe(reason)
    }
  })

  it("keeps the key out of logs", () => {
    const parsed = key("cbc:hunter2")
    expect(String(parsed.secret)).not.toContain("hunter2")
    expect(JSON.stringify(parsed)).not.toContain("hunter2")
  })
})

describe("isFishPayload", () => {
  it.each([
    { text: "+OK abc", expected: true },
    { text: "+OK *abc", expected: true },
    { text: "mcps abc", expected: true },
    { text: "+OKabc", expected: false },
    { text: "+ok abc", expected: false },
    { text: "MCPS abc", expected: false },
    { text: " +OK abc", expected: false },
    { text: "hello +OK abc", expected: false },
    { text: "", expected: false }
  ])("$text → $expected", ({ text, expected }) => {
    expect(isFishPayload(text)).toBe(expected)
  })
})

describe("FiSH base64", () => {
  // synfron/FiSH FiSHTests/FishBase64Tests.cs (both rows); the second also in mpolden/fish
  // fish_test.go Test_Base64Encode/Test_Base64Decode, whose decode keeps the 5 padding NULs.
  it.each([
    { text: "egg spam", encoded: "H34qN/uqQnz/" },
    { text: QUICK_FOX, encoded: "xzkrL/ui4oi/uSQrJ/M746F/KPkrE/uuRpA/O/wqz/QX46N/uyBsv/G/gnC/.......qQpy/" }
  ])("$encoded", ({ text, encoded }) => {
    expect(fishBase64Encode(new TextEncoder().encode(text))).toBe(encoded)
    const decoded = fishBase64Decode(encoded)
    expect(decoded).toBeDefined()
    expect(Buffer.from(decoded ?? new Uint8Array()).toString("latin1")).toBe(
      text + "\0".repeat((8 - (bytes(text) % 8)) % 8)
    )
  })

  it("encodes nothing as nothing and refuses partial groups and foreign characters", () => {
    expect(fishBase64Encode(new Uint8Array())).toBe("")
    expect(fishBase64Decode("")).toEqual(new Uint8Array())
    expect(fishBase64Decode("H34qN/uqQnz")).toBeUndefined()
    expect(fishBase64Decode("H34qN/uqQnz+")).toBeUndefined()
  })
})

describe("fishEncrypt / fishDecrypt against other implementations", () => {
  it("ECB: mpolden/fish and synfron/FiSH vectors", () => {
    expect(fishEncrypt(key("unladen swallow"), QUICK_FOX)).toBe(ECB_FOX)
    expect(fishEncrypt(key("123456781234567812345"), AUTOSWITCH)).toBe(ECB_AUTOSWITCH)
    expect(fishDecrypt(key("unladen swallow"), ECB_FOX)).toEqual({
      ok: true,
      text: QUICK_FOX,
      mode: "ecb",
      truncated: false
    })
    expect(fishDecrypt(key("123456781234567812345"), ECB_AUTOSWITCH)).toMatchObject({ ok: true, text: AUTOSWITCH })
  })

  it("accepts the Mircryption prefix (mpolden/fish Test_Decrypt_McpsPrefix)", () => {
    const mcps = "mcps " + ECB_FOX.slice("+OK ".length)
    expect(fishDecrypt(key("unladen swallow"), mcps)).toMatchObject({ ok: true, text: QUICK_FOX })
  })

  it("CBC: synfron/FiSH CbcDecrypt vectors", () => {
    expect(fishDecrypt(key("cbc:unladen swallow"), CBC_FOX)).toEqual({
      ok: true,
      text: QUICK_FOX,
      mode: "cbc",
      truncated: false
    })
    expect(fishDecrypt(key("cbc:123456781234567812345"), CBC_AUTOSWITCH)).toMatchObject({
      ok: true,
      text: AUTOSWITCH,
      mode: "cbc"
    })
  })

  it("detects the mode from the message, whatever the key's mode", () => {
    expect(fishDecrypt(key("unladen swallow"), CBC_FOX)).toMatchObject({ ok: true, mode: "cbc", text: QUICK_FOX })
    expect(fishDecrypt(key("cbc:unladen swallow"), ECB_FOX)).toMatchObject({ ok: true, mode: "ecb", text: QUICK_FOX })
  })

  it.each(OPENSSL_VECTORS)("OpenSSL: $name", ({ key: raw, iv, text, payload }) => {
    expect(fishEncrypt(key(raw), text, fixedIv(iv))).toBe(payload)
    expect(fishDecrypt(key(raw), payload)).toMatchObject({ ok: true, text })
  })

  it("reads only the first word after the prefix, as FiSHLiM does", () => {
    expect(fishDecrypt(key("unladen swallow"), `${ECB_FOX} trailing words`)).toMatchObject({
      ok: true,
      text: QUICK_FOX
    })
  })
})

describe("round trips", () => {
  const samples = [
    "a",
    "12345678",
    "123456789",
    "héllo wörld",
    "emoji 😀🎉👍🏽 and a family 👩‍👩‍👧‍👦",
    "日本語のテキスト、中文文本、한국어 텍스트",
    "combining: e\u0301 a\u0308 n\u0303",
    "\u0001ACTION waves\u0001",
    "x".repeat(300)
  ]
  const modes: ReadonlyArray<FishMode> = ["ecb", "cbc"]

  it.each(modes.flatMap((mode) => samples.map((text) => ({ mode, text }))))("$mode: $text", ({ mode, text }) => {
    const k = key(`${mode}:s3cret ключ`)
    const payload = fishEncrypt(k, text)
    expect(isFishPayload(payload)).toBe(true)
    expect(payload.startsWith(mode === "cbc" ? "+OK *" : "+OK ")).toBe(true)
    expect(bytes(payload)).toBe(fishPayloadBytes(mode, bytes(text)))
    expect(fishDecrypt(k, payload)).toEqual({ ok: true, text, mode, truncated: false })
  })

  it("draws a fresh IV for every CBC message", () => {
    const k = key("cbc:secret")
    expect(fishEncrypt(k, "same text")).not.toBe(fishEncrypt(k, "same text"))
  })

  it("holds for any text, any key and every mode", () => {
    const text = FastCheck.string({ unit: "grapheme", minLength: 1, maxLength: 120 }).filter((s) => !/[\0\r\n]/.test(s))
    const secret = FastCheck.string({ unit: "binary", minLength: 1, maxLength: 90 }).filter((s) => !/[\0\r\n]/.test(s))
    FastCheck.assert(
      FastCheck.property(text, secret, FastCheck.constantFrom<FishMode>("ecb", "cbc"), (t, s, mode) => {
        const k = key(`${mode}:${s}`)
        const result = fishDecrypt(k, fishEncrypt(k, t))
        expect(result).toEqual({ ok: true, text: t, mode, truncated: false })
      }),
      { numRuns: 300 }
    )
  })
})

describe("bad input", () => {
  const k = key("unladen swallow")

  it.each([
    { payload: "hello", reason: "not-fish" },
    { payload: "+OKzT/uX.Z4Q3A/", reason: "not-fish" },
    { payload: "+ok zT/uX.Z4Q3A/", reason: "not-fish" },
    { payload: "", reason: "not-fish" },
    { payload: "+OK ", reason: "malformed" },
    { payload: "+OK  zT/uX.Z4Q3A/", reason: "malformed" },
    { payload: "+OK zT/uX.Z4Q3A", reason: "malformed" },
    { payload: "+OK zT/uX.Z4Q3A/G4Yz!02hMhT1", reason: "malformed" },
    { payload: "+OK zT/uX+Z4Q3A/", reason: "malformed" },
    { payload: "+OK *", reason: "malformed" },
    { payload: "+OK *AAECAwQFBgc=", reason: "malformed" },
    { payload: "+OK *AAECAwQFBgcICQoLDA0ODw$=", reason: "malformed" },
    { payload: "+OK *AAECAwQFBgcICQoLDA0ODw=====", reason: "malformed" },
    { payload: "+OK *ab.d", reason: "malformed" }
  ])("$payload → $reason", ({ payload, reason }) => {
    expect(fishDecrypt(k, payload)).toEqual({ ok: false, reason })
  })

  it("reports a wrong key instead of returning garbage", () => {
    for (const payload of [ECB_FOX, CBC_FOX, ECB_AUTOSWITCH, CBC_AUTOSWITCH]) {
      const result = fishDecrypt(key("not the key"), payload)
      expect(result.ok).toBe(false)
    }
  })

  // Ciphertexts no FiSH sender writes, made with the raw cipher under the right key.
  const forged = (plain: string): string => {
    const bf = new Blowfish(new TextEncoder().encode("unladen swallow"))
    return "+OK " + fishBase64Encode(bf.encryptEcb(new TextEncoder().encode(plain)))
  }

  it.each([
    { name: "a CR LF smuggling a second line", plain: "hi\r\nQUIT :bye\0\0\0", reason: "garbled" },
    { name: "a bare LF", plain: "hi\nthere\0\0\0\0\0\0\0\0", reason: "garbled" },
    { name: "bytes after the zero padding", plain: "hi\0\0\0\0\0x", reason: "garbled" },
    { name: "padding only", plain: "\0\0\0\0\0\0\0\0", reason: "empty" },
    { name: "invalid UTF-8", plain: "caf\xe9\0\0\0\0", reason: "not-utf8" }
  ])("refuses $name ($reason)", ({ plain, reason }) => {
    const bytes8 = Uint8Array.from(plain, (c) => c.charCodeAt(0))
    const bf = new Blowfish(new TextEncoder().encode("unladen swallow"))
    const payload = "+OK " + fishBase64Encode(bf.encryptEcb(bytes8))
    expect(fishDecrypt(k, payload)).toEqual({ ok: false, reason })
  })

  it("accepts text followed by zero padding and IRC formatting codes", () => {
    expect(fishDecrypt(k, forged("\u0002bold\u0002\0\0"))).toMatchObject({ ok: true, text: "\u0002bold\u0002" })
  })

  it("refuses to encrypt what no receiver could show", () => {
    expect(() => fishEncrypt(k, "")).toThrow(RangeError)
    expect(() => fishEncrypt(k, "two\nlines")).toThrow(RangeError)
    expect(() => fishEncrypt(k, "cr\r")).toThrow(RangeError)
    expect(() => fishEncrypt(k, "nul\0")).toThrow(RangeError)
    expect(() => fishEncrypt(key("cbc:x"), "text", () => new Uint8Array(4))).toThrow(RangeError)
  })
})

describe("lines the server cut short", () => {
  it("ECB: keeps the whole blocks and says so", () => {
    const cut = ECB_AUTOSWITCH.slice(0, ECB_AUTOSWITCH.length - 17)
    const result = fishDecrypt(key("123456781234567812345"), cut)
    expect(result).toMatchObject({ ok: true, mode: "ecb", truncated: true })
    if (result.ok) {
      expect(AUTOSWITCH.startsWith(result.text)).toBe(true)
      expect(result.text.length).toBe(Math.floor((cut.length - 4) / 12) * 8)
    }
  })

  it("CBC: keeps the whole blocks and says so", () => {
    const k = key("123456781234567812345")
    // 376 characters; cutting 23 leaves 353, one past whole quads; cutting 30 leaves 259
    // bytes, three past whole blocks.
    for (const drop of [23, 30]) {
      const result = fishDecrypt(k, CBC_AUTOSWITCH.slice(0, CBC_AUTOSWITCH.length - drop))
      expect(result).toMatchObject({ ok: true, mode: "cbc", truncated: true })
    }
    for (let drop = 1; drop <= 300; drop++) {
      const result = fishDecrypt(k, CBC_AUTOSWITCH.slice(0, CBC_AUTOSWITCH.length - drop))
      expect(result.ok).toBe(true)
      if (result.ok) expect(AUTOSWITCH.startsWith(result.text)).toBe(true)
    }
  })

  it("CBC without its = padding is not a cut line", () => {
    const unpadded = CBC_FOX.replace(/=+$/, "")
    expect(fishDecrypt(key("unladen swallow"), unpadded)).toEqual({
      ok: true,
      text: QUICK_FOX,
      mode: "cbc",
      truncated: false
    })
  })

  it("drops a character the cut split in two", () => {
    const k = key("secret")
    const text = "€".repeat(40) // 3 bytes each, so block boundaries fall inside characters
    const payload = fishEncrypt(k, text)
    for (let keep = 1; keep <= 14; keep++) {
      const cut = payload.slice(0, 4 + keep * 12 + 5)
      const result = fishDecrypt(k, cut)
      expect(result).toMatchObject({ ok: true, truncated: true })
      if (result.ok) {
        expect(text.startsWith(result.text)).toBe(true)
        expect(result.text).toBe("€".repeat(Math.floor((keep * 8) / 3)))
      }
    }
  })
})

describe("line sizes", () => {
  it("fishPayloadBytes follows FiSHLiM's ecb_len / cbc_len plus the prefix", () => {
    for (let n = 1; n <= 200; n++) {
      const blocks = Math.ceil(n / 8)
      expect(fishPayloadBytes("ecb", n)).toBe(4 + 12 * blocks)
      expect(fishPayloadBytes("cbc", n)).toBe(5 + 4 * Math.ceil((8 + 8 * blocks) / 3))
      const text = "a".repeat(n)
      expect(bytes(fishEncrypt(key("ecb:k"), text))).toBe(fishPayloadBytes("ecb", n))
      expect(bytes(fishEncrypt(key("cbc:k"), text))).toBe(fishPayloadBytes("cbc", n))
    }
  })

  it("maxPlaintextBytesForLine is the largest plaintext that fits", () => {
    for (const mode of ["ecb", "cbc"] as const) {
      for (let overhead = 0; overhead <= IRC_MAX_LINE_BYTES + 10; overhead++) {
        const max = maxPlaintextBytesForLine(mode, overhead)
        expect(max % 8).toBe(0)
        expect(max).toBeGreaterThanOrEqual(0)
        if (max > 0) expect(overhead + fishPayloadBytes(mode, max)).toBeLessThanOrEqual(IRC_MAX_LINE_BYTES)
        expect(overhead + fishPayloadBytes(mode, max + 1)).toBeGreaterThan(IRC_MAX_LINE_BYTES)
      }
    }
  })

  it("gives the figures a typical channel line allows", () => {
    // `:nick!~user@host.example ` (26) + `PRIVMSG #belay :` (16) + CR-LF (2) = 44 bytes.
    const overhead = 26 + privmsgOverheadBytes("#belay", 0)
    expect(overhead).toBe(44)
    expect(maxPlaintextBytesForLine("ecb", overhead)).toBe(304) // 38 blocks → 4 + 456 = 460
    expect(maxPlaintextBytesForLine("cbc", overhead)).toBe(336) // 42 blocks → 5 + 460 = 465
    expect(maxPlaintextBytesForLine("ecb", overhead, 100)).toBe(32)
    expect(maxPlaintextBytesForLine("ecb", 600)).toBe(0)
  })
})

describe("splitForFish", () => {
  const lineBytes = (mode: FishMode, target: string, prefixAllowance: number, piece: string): number =>
    prefixAllowance + bytes(`PRIVMSG ${target} :${fishEncrypt(key(`${mode}:k`), piece)}`) + 2

  it("gives nothing for empty text and one piece for short text", () => {
    expect(splitForFish("", "#c", 512, 100, "cbc")).toEqual([])
    expect(splitForFish("hello", "#c", 512, 100, "ecb")).toEqual(["hello"])
  })

  it("breaks long prose after a space", () => {
    const text = Array.from({ length: 120 }, (_, i) => `word${i}`).join(" ")
    const pieces = splitForFish(text, "#belay", 512, 100, "ecb")
    expect(pieces.length).toBeGreaterThan(1)
    expect(pieces.join("")).toBe(text)
    for (const piece of pieces.slice(0, -1)) expect(piece.endsWith(" ")).toBe(true)
    for (const piece of pieces) expect(lineBytes("ecb", "#belay", 100, piece)).toBeLessThanOrEqual(512)
  })

  it("never cuts inside an emoji, even a joined one", () => {
    const family = "👩‍👩‍👧‍👦" // 25 bytes, one grapheme
    const text = family.repeat(40)
    const pieces = splitForFish(text, "#c", 300, 50, "cbc")
    expect(pieces.length).toBeGreaterThan(1)
    for (const piece of pieces) {
      expect(piece.length % family.length).toBe(0)
      expect(lineBytes("cbc", "#c", 50, piece)).toBeLessThanOrEqual(300)
    }
    expect(pieces.join("")).toBe(text)
  })

  it("falls back to code points inside a cluster too big for one line", () => {
    const text = "a" + "\u0301".repeat(200) // one grapheme of 401 bytes
    const pieces = splitForFish(text, "#c", 200, 0, "ecb")
    expect(pieces.length).toBeGreaterThan(1)
    expect(pieces.join("")).toBe(text)
    for (const piece of pieces) expect(lineBytes("ecb", "#c", 0, piece)).toBeLessThanOrEqual(200)
  })

  it("leaves room for a CTCP ACTION when told to", () => {
    const text = "waves ".repeat(100)
    const prefix = 60 + CTCP_ACTION_OVERHEAD_BYTES
    for (const piece of splitForFish(text, "#c", 512, prefix, "cbc")) {
      const payload = fishEncrypt(key("cbc:k"), piece)
      expect(60 + bytes(`PRIVMSG #c :\u0001ACTION ${payload}\u0001`) + 2).toBeLessThanOrEqual(512)
    }
  })

  it("refuses a line with no room for one character", () => {
    expect(() => splitForFish("hi", "#" + "c".repeat(400), 512, 100, "ecb")).toThrow(RangeError)
  })

  it("never exceeds the line limit and never loses a character", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.string({ unit: "grapheme", maxLength: 600 }),
        FastCheck.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 40 }).map((s) => "#" + s.replace(/[ ,\r\n\0]/g, "x")),
        FastCheck.integer({ min: 0, max: 150 }),
        FastCheck.integer({ min: 300, max: 512 }),
        FastCheck.constantFrom<FishMode>("ecb", "cbc"),
        (text, target, prefixAllowance, maxLineBytes, mode) => {
          const pieces = splitForFish(text, target, maxLineBytes, prefixAllowance, mode)
          expect(pieces.join("")).toBe(text)
          for (const piece of pieces) {
            expect(piece.length).toBeGreaterThan(0)
            expect(piece).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/)
            expect(prefixAllowance + bytes(`PRIVMSG ${target} :`) + 2 + fishPayloadBytes(mode, bytes(piece)))
              .toBeLessThanOrEqual(maxLineBytes)
          }
        }
      ),
      { numRuns: 300 }
    )
  })
})
