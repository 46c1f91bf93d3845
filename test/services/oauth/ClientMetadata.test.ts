import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import {
  classifyRedirectUri,
  clientUriHost,
  matchRedirectUri,
  type RedirectTarget,
  redirectTarget,
  type RedirectUriKind,
  type RedirectUriRule,
  validateClientName,
  validateClientUri,
  validateRedirectUris,
  validateRegisterRequest
} from "../../../src/services/oauth/ClientMetadata.js"

// RFC 6749 §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E.
const DESCRIPTION_CHARSET = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/

const expectLeft = <A, E>(result: Either.Either<A, E>): E => {
  if (Either.isRight(result)) throw new Error(`expected a refusal, got ${JSON.stringify(result.right)}`)
  return result.left
}
const expectRight = <A, E>(result: Either.Either<A, E>): A => {
  if (Either.isLeft(result)) throw new Error(`expected acceptance, got ${String(result.left)}`)
  return result.right
}

describe("classifyRedirectUri", () => {
  const accepted: ReadonlyArray<{ readonly name: string; readonly uri: string; readonly kind: RedirectUriKind }> = [
    { name: "https with path", uri: "https://app.example/cb", kind: "https" },
    { name: "https with query", uri: "https://app.example/cb?x=1", kind: "https" },
    { name: "https with an explicit non-default port", uri: "https://app.example:8443/cb", kind: "https" },
    { name: "https with an empty path (same as /)", uri: "https://app.example", kind: "https" },
    { name: "https with an empty path and a query", uri: "https://app.example?x=1", kind: "https" },
    { name: "https with percent-encoded UTF-8", uri: "https://app.example/%C3%A9", kind: "https" },
    { name: "https with a percent-encoded unreserved character", uri: "https://app.example/%63b", kind: "https" },
    { name: "https on an IPv6 literal", uri: "https://[2001:db8::1]/cb", kind: "https" },
    { name: "loopback 127.0.0.1", uri: "http://127.0.0.1/cb", kind: "loopback" },
    { name: "loopback 127.0.0.1 with port", uri: "http://127.0.0.1:8080/cb", kind: "loopback" },
    { name: "loopback [::1]", uri: "http://[::1]/cb", kind: "loopback" },
    { name: "loopback [::1] with port", uri: "http://[::1]:3000/cb", kind: "loopback" },
    { name: "loopback localhost with port", uri: "http://localhost:3000/cb", kind: "loopback" },
    { name: "loopback localhost as VS Code registers it", uri: "http://localhost/callback", kind: "loopback" },
    { name: "loopback with a query", uri: "http://127.0.0.1/cb?x=1", kind: "loopback" },
    { name: "reverse-DNS scheme (RFC 8252 §7.1)", uri: "com.example.app:/oauth2redirect", kind: "custom" },
    { name: "reverse-DNS scheme, short path", uri: "com.example.app:/cb", kind: "custom" },
    { name: "reverse-DNS scheme with authority", uri: "com.example.app://callback", kind: "custom" },
    { name: "a dotted scheme browsers treat as unknown", uri: "java.script:x", kind: "custom" },
    { name: "the out-of-band literal", uri: "urn:ietf:wg:oauth:2.0:oob", kind: "oob" }
  ]

  it.each(accepted)("accepts $name: $uri", ({ uri, kind }) => {
    expect(classifyRedirectUri(uri)).toStrictEqual(Either.right(kind))
  })

  const refused: ReadonlyArray<{ readonly name: string; readonly uri: string; readonly rule: RedirectUriRule }> = [
    { name: "empty string", uri: "", rule: "empty" },
    // R-08 fragments, checked on the raw string (new URL drops an empty "#")
    { name: "fragment", uri: "https://a.b/#x", rule: "fragment" },
    { name: "empty fragment", uri: "https://app.example/cb#", rule: "fragment" },
    { name: "fragment on a custom scheme", uri: "com.example.app:/cb#", rule: "fragment" },
    { name: "fragment on loopback", uri: "http://127.0.0.1:5/cb#f", rule: "fragment" },
    // R-09 userinfo, checked on the raw authority
    { name: "userinfo", uri: "https://user@host/", rule: "userinfo" },
    { name: "user and password", uri: "https://u:p@app.example/cb", rule: "userinfo" },
    { name: "empty userinfo", uri: "http://@127.0.0.1/cb", rule: "userinfo" },
    { name: "empty user and password", uri: "http://:@127.0.0.1/cb", rule: "userinfo" },
    { name: "localhost as userinfo of another host", uri: "http://localhost:@evil.example/cb", rule: "userinfo" },
    { name: "userinfo on a custom scheme", uri: "com.example.app://user@cb/", rule: "userinfo" },
    // R-10 characters
    { name: "non-ASCII", uri: "https://app.example/é", rule: "character" },
    { name: "tab in the path", uri: "https://app.example/a\tb", rule: "character" },
    { name: "tab in the host (WHATWG strips it)", uri: "https://app.exa\tmple/cb", rule: "character" },
    { name: "space", uri: "https://app.example/a b", rule: "character" },
    { name: "newline", uri: "https://app.example/cb\n", rule: "character" },
    { name: "NUL", uri: "https://app.example/\u0000", rule: "character" },
    { name: "DEL", uri: "https://app.example/\u007f", rule: "character" },
    { name: "backslash (hosts differ between parsers)", uri: "https://a.example\\@evil.example/cb", rule: "character" },
    { name: "OOB with a trailing space", uri: "urn:ietf:wg:oauth:2.0:oob ", rule: "character" },
    { name: "angle brackets", uri: "https://app.example/<x>", rule: "rfc3986-character" },
    { name: "braces", uri: "https://app.example/{x}", rule: "rfc3986-character" },
    { name: "pipe in the query", uri: "https://app.example/cb?x=|", rule: "rfc3986-character" },
    { name: "double quote", uri: "https://app.example/\"", rule: "rfc3986-character" },
    // R-11 http only on loopback, decided on the raw host
    { name: "plain http on a domain", uri: "http://app.example/cb", rule: "http-not-loopback" },
    { name: "localhost as a label prefix", uri: "http://localhost.evil.com/cb", rule: "http-not-loopback" },
    { name: "127.0.0.1 as a label prefix", uri: "http://127.0.0.1.nip.io/cb", rule: "http-not-loopback" },
    { name: "another 127/8 address", uri: "http://127.0.0.2/cb", rule: "http-not-loopback" },
    { name: "short IPv4 form", uri: "http://127.1/cb", rule: "http-not-loopback" },
    { name: "decimal IPv4 form", uri: "http://2130706433/cb", rule: "http-not-loopback" },
    { name: "hex IPv4 form", uri: "http://0x7f.0.0.1/cb", rule: "http-not-loopback" },
    { name: "zero-padded IPv4", uri: "http://127.000.000.001/cb", rule: "http-not-loopback" },
    { name: "uncompressed IPv6 loopback", uri: "http://[0:0:0:0:0:0:0:1]/cb", rule: "http-not-loopback" },
    { name: "uppercase LOCALHOST", uri: "http://LOCALHOST/cb", rule: "http-not-loopback" },
    { name: "localhost with a trailing dot", uri: "http://localhost./cb", rule: "http-not-loopback" },
    // schemes
    { name: "uppercase HTTP scheme", uri: "HTTP://127.0.0.1/cb", rule: "uppercase-scheme" },
    { name: "uppercase HTTPS scheme", uri: "HTTPS://app.example/cb", rule: "uppercase-scheme" },
    { name: "uppercase custom scheme", uri: "Com.Example.App:/cb", rule: "uppercase-scheme" },
    { name: "uppercase OOB", uri: "URN:ietf:wg:oauth:2.0:oob", rule: "uppercase-scheme" },
    // ports
    { name: "port 0", uri: "http://127.0.0.1:0/cb", rule: "port" },
    { name: "port 65536", uri: "http://127.0.0.1:65536/cb", rule: "port" },
    { name: "empty port", uri: "http://127.0.0.1:/cb", rule: "port" },
    { name: "zero-padded port", uri: "https://app.example:08443/cb", rule: "port" },
    // R-12 custom schemes need a dot
    { name: "custom scheme without a dot", uri: "myapp:/cb", rule: "custom-scheme-without-dot" },
    { name: "custom scheme without a dot, with authority", uri: "myapp://cb", rule: "custom-scheme-without-dot" },
    { name: "javascript:", uri: "javascript:alert(1)", rule: "custom-scheme-without-dot" },
    { name: "data:", uri: "data:text/html,x", rule: "custom-scheme-without-dot" },
    { name: "file:", uri: "file:///etc/passwd", rule: "custom-scheme-without-dot" },
    { name: "vbscript:", uri: "vbscript:x", rule: "custom-scheme-without-dot" },
    { name: "blob:", uri: "blob:x", rule: "custom-scheme-without-dot" },
    { name: "about:", uri: "about:blank", rule: "custom-scheme-without-dot" },
    { name: "OOB look-alike with a suffix", uri: "urn:ietf:wg:oauth:2.0:oob:auto", rule: "custom-scheme-without-dot" },
    { name: "scheme starting with a dot", uri: ".com:/x", rule: "scheme" },
    { name: "bare oob", uri: "oob", rule: "scheme" },
    { name: "relative path", uri: "/cb", rule: "scheme" },
    { name: "relative word", uri: "cb", rule: "scheme" },
    { name: "scheme-relative", uri: "//app.example/cb", rule: "scheme" },
    //
    { name: "https without a host", uri: "https:///cb", rule: "host" },
    { name: "https without //", uri: "https:app.example/cb", rule: "non-canonical" },
    { name: "explicit default port 443", uri: "https://app.example:443/cb", rule: "non-canonical" },
    { name: "explicit default port 80 on loopback", uri: "http://127.0.0.1:80/cb", rule: "non-canonical" },
    { name: "dot segments", uri: "http://127.0.0.1/a/../cb", rule: "non-canonical" },
    { name: "uppercase host", uri: "https://APP.example/cb", rule: "non-canonical" },
    { name: "percent-encoded host", uri: "https://%61pp.example/cb", rule: "non-canonical" },
    { name: "dot segments on a custom scheme", uri: "com.example.app://host/a/../b", rule: "non-canonical" },
    //
    { name: "query already holding state", uri: "https://app.example/cb?state=1", rule: "reserved-query-parameter" },
    { name: "query already holding code", uri: "http://127.0.0.1/cb?code=x", rule: "reserved-query-parameter" },
    { name: "query already holding iss", uri: "com.example.app:/cb?iss=x", rule: "reserved-query-parameter" },
    { name: "query already holding error", uri: "https://app.example/cb?a=1&error=x", rule: "reserved-query-parameter" }
  ]

  it.each(refused)("refuses $name: $uri", ({ uri, rule }) => {
    expect(classifyRedirectUri(uri)).toStrictEqual(Either.left(rule))
  })
})

describe("validateRedirectUris", () => {
  const shapes: ReadonlyArray<{ readonly name: string; readonly raw: unknown }> = [
    { name: "missing", raw: undefined },
    { name: "null", raw: null },
    { name: "a string", raw: "https://app.example/cb" },
    { name: "an object", raw: { 0: "https://app.example/cb" } },
    { name: "empty array", raw: [] },
    { name: "a number entry", raw: [1] },
    { name: "a null entry", raw: [null] },
    { name: "a nested array", raw: [["https://app.example/cb"]] },
    { name: "one good and one bad entry", raw: ["https://app.example/cb", "http://app.example/cb"] }
  ]

  it.each(shapes)("refuses $name with invalid_redirect_uri", ({ raw }) => {
    const e = expectLeft(validateRedirectUris(raw))
    expect(e.error).toBe("invalid_redirect_uri")
    expect(e.status).toBe(400)
    expect(e.description).toMatch(DESCRIPTION_CHARSET)
  })

  // 2000 characters in total over all entries
  const prefix = "https://app.example/" // 20 characters
  const ofLength = (n: number) => prefix + "a".repeat(n - prefix.length)

  it.each([
    { name: "one URI of exactly 2000", uris: [ofLength(2000)], ok: true },
    { name: "two URIs totalling exactly 2000", uris: [ofLength(1000), ofLength(1000)], ok: true },
    { name: "one URI of 2001", uris: [ofLength(2001)], ok: false },
    { name: "two URIs totalling 2001", uris: [ofLength(1000), ofLength(1001)], ok: false }
  ])("total length: $name", ({ uris, ok }) => {
    expect(uris.reduce((n, u) => n + u.length, 0)).toBe(ok ? 2000 : 2001)
    const result = validateRedirectUris(uris)
    if (ok) expect(expectRight(result)).toStrictEqual(uris)
    else expect(expectLeft(result).error).toBe("invalid_redirect_uri")
  })

  it("returns the entries as sent, in order", () => {
    const uris = ["com.example.app:/cb", "http://127.0.0.1/cb", "urn:ietf:wg:oauth:2.0:oob"]
    expect(expectRight(validateRedirectUris(uris))).toStrictEqual(uris)
  })

  it("names the offending entry without echoing it", () => {
    const e = expectLeft(validateRedirectUris(["https://app.example/cb", "https://a.b/#evil"]))
    expect(e.description).toBe("redirect_uris[1] must not contain a fragment")
  })
})

describe("validateClientName", () => {
  const bidiControls = [0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]

  const accepted: ReadonlyArray<{ readonly name: string; readonly value: string }> = [
    { name: "a plain name", value: "Claude Code" },
    { name: "60 ASCII characters", value: "a".repeat(60) },
    { name: "60 emoji (120 UTF-16 units)", value: "😀".repeat(60) },
    { name: "accents and symbols", value: "Café ☕ — client" },
    { name: "an emoji ZWJ sequence", value: "Family 👨‍👩‍👧" },
    { name: "markup (escaped when shown)", value: "<script>alert(1)</script>" },
    { name: "surrounding spaces kept as sent", value: " App " }
  ]

  it.each(accepted)("accepts $name", ({ value }) => {
    expect(validateClientName(value)).toStrictEqual(Either.right(value))
  })

  const refused: ReadonlyArray<{ readonly name: string; readonly value: unknown }> = [
    { name: "missing", value: undefined },
    { name: "null", value: null },
    { name: "a number", value: 123 },
    { name: "an array", value: ["App"] },
    { name: "empty", value: "" },
    { name: "only spaces", value: "   " },
    { name: "61 ASCII characters", value: "a".repeat(61) },
    { name: "61 emoji", value: "😀".repeat(61) },
    { name: "U+0007 BEL", value: "App\u0007" },
    { name: "U+0000 NUL", value: "App\u0000" },
    { name: "tab", value: "A\tpp" },
    { name: "newline", value: "App\n" },
    { name: "ESC", value: "\u001b[31mApp" },
    { name: "DEL", value: "App\u007f" },
    { name: "U+0085 NEL", value: "App\u0085" },
    { name: "U+009B CSI", value: "App\u009b" },
    { name: "U+202E right-to-left override", value: "Good App\u202Eppa.exe" },
    ...bidiControls.map((cp) => ({
      name: `Bidi_Control U+${cp.toString(16).toUpperCase().padStart(4, "0")}`,
      value: `App${String.fromCodePoint(cp)}x`
    })),
    { name: "zero-width space", value: "A\u200Bpp" },
    { name: "line separator U+2028", value: "App\u2028" },
    { name: "byte order mark", value: "\uFEFFApp" },
    { name: "soft hyphen", value: "Ap\u00ADp" },
    { name: "a lone surrogate", value: "App\uD800" }
  ]

  it.each(refused)("refuses $name with invalid_client_metadata", ({ value }) => {
    const e = expectLeft(validateClientName(value))
    expect(e.error).toBe("invalid_client_metadata")
    expect(e.description).toMatch(DESCRIPTION_CHARSET)
  })
})

describe("validateClientUri", () => {
  const accepted: ReadonlyArray<{ readonly name: string; readonly value: unknown; readonly host: string | undefined }> = [
    { name: "absent", value: undefined, host: undefined },
    { name: "null treated as absent", value: null, host: undefined },
    { name: "https", value: "https://x.example", host: "x.example" },
    { name: "http", value: "http://x.example/about", host: "x.example" },
    { name: "a non-default port is part of the host", value: "https://x.example:8443/", host: "x.example:8443" },
    { name: "an IDN shown as punycode (U-02)", value: "https://аpple.com", host: "xn--pple-43d.com" },
    { name: "2000 characters", value: "https://x.example/" + "a".repeat(2000 - 18), host: "x.example" }
  ]

  it.each(accepted)("accepts $name", ({ value, host }) => {
    const result = expectRight(validateClientUri(value))
    if (host === undefined) expect(result).toBeUndefined()
    else expect(result).toStrictEqual({ uri: value, host })
  })

  const refused: ReadonlyArray<{ readonly name: string; readonly value: unknown }> = [
    { name: "a number", value: 1 },
    { name: "empty", value: "" },
    { name: "javascript:", value: "javascript:alert(1)" },
    { name: "ftp:", value: "ftp://x" },
    { name: "scheme-relative", value: "//x.example" },
    { name: "a word", value: "x" },
    { name: "2001 characters", value: "https://x.example/" + "a".repeat(2001 - 18) },
    { name: "userinfo hiding the real host", value: "https://good.example@evil.example" },
    { name: "a space", value: "https://x.example/a b" },
    { name: "a control character", value: "https://x.example/\u0007" },
    { name: "a text-direction override", value: "https://x.example/\u202E" }
  ]

  it.each(refused)("refuses $name with invalid_client_metadata", ({ value }) => {
    const e = expectLeft(validateClientUri(value))
    expect(e.error).toBe("invalid_client_metadata")
    expect(e.description).toMatch(DESCRIPTION_CHARSET)
  })

  it("clientUriHost reads the display host of a stored client_uri", () => {
    expect(clientUriHost("https://x.example:8443/a")).toBe("x.example:8443")
    expect(clientUriHost(null)).toBeUndefined()
    expect(clientUriHost(undefined)).toBeUndefined()
  })
})

describe("validateRegisterRequest", () => {
  it("keeps the three known fields and ignores the rest", () => {
    const result = validateRegisterRequest({
      client_name: "CLI",
      redirect_uris: ["http://127.0.0.1/cb"],
      client_uri: "https://cli.example",
      client_id: "admin",
      scope: "x",
      grant_types: ["client_credentials"],
      token_endpoint_auth_method: "client_secret_basic",
      logo_uri: "https://cli.example/logo.png",
      foo: 1
    })
    expect(expectRight(result)).toStrictEqual({
      client_name: "CLI",
      redirect_uris: ["http://127.0.0.1/cb"],
      client_uri: "https://cli.example"
    })
  })

  it("has no client_uri key when none was sent", () => {
    const result = expectRight(validateRegisterRequest({ client_name: "CLI", redirect_uris: ["http://127.0.0.1/cb"] }))
    expect(Object.hasOwn(result, "client_uri")).toBe(false)
  })

  it.each([
    { name: "null", body: null },
    { name: "an array", body: [1] },
    { name: "a string", body: "{}" },
    { name: "a number", body: 1 }
  ])("refuses a body that is $name as a malformed body (no description)", ({ body }) => {
    const e = expectLeft(validateRegisterRequest(body))
    expect(e.error).toBe("invalid_request")
    expect(e.description).toBeUndefined()
  })

  it.each([
    { name: "missing client_name", body: { redirect_uris: ["http://127.0.0.1/cb"] }, error: "invalid_client_metadata" },
    { name: "bad client_uri", body: { client_name: "A", client_uri: "ftp://x", redirect_uris: ["http://127.0.0.1/cb"] }, error: "invalid_client_metadata" },
    { name: "missing redirect_uris", body: { client_name: "A" }, error: "invalid_redirect_uri" },
    { name: "bad name and bad redirect_uris: metadata first", body: { client_name: "", redirect_uris: [] }, error: "invalid_client_metadata" }
  ])("refuses $name with $error", ({ body, error }) => {
    expect(expectLeft(validateRegisterRequest(body)).error).toBe(error)
  })

  it("does not read inherited properties", () => {
    const body: object = Object.create({ client_name: "Inherited", redirect_uris: ["http://127.0.0.1/cb"] })
    expect(expectLeft(validateRegisterRequest(body)).error).toBe("invalid_client_metadata")
  })
})

describe("matchRedirectUri", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly registered: ReadonlyArray<string>
    readonly presented: string
    readonly matched: string | undefined
  }> = [
    { name: "https exact", registered: ["https://app.example/cb"], presented: "https://app.example/cb", matched: "https://app.example/cb" },
    { name: "second of several", registered: ["https://a.example/cb", "https://app.example/cb"], presented: "https://app.example/cb", matched: "https://app.example/cb" },
    // simple string comparison for https
    { name: "https host case differs", registered: ["https://app.example/cb"], presented: "https://APP.example/cb", matched: undefined },
    { name: "https explicit default port", registered: ["https://app.example/cb"], presented: "https://app.example:443/cb", matched: undefined },
    { name: "https trailing slash", registered: ["https://app.example/cb"], presented: "https://app.example/cb/", matched: undefined },
    { name: "https path case differs", registered: ["https://app.example/cb"], presented: "https://app.example/CB", matched: undefined },
    { name: "https empty query added", registered: ["https://app.example/cb"], presented: "https://app.example/cb?", matched: undefined },
    { name: "https percent-encoded path", registered: ["https://app.example/cb"], presented: "https://app.example/%63b", matched: undefined },
    { name: "https port may not vary", registered: ["https://app.example/cb"], presented: "https://app.example:8443/cb", matched: undefined },
    // loopback port variance (RFC 8252 §7.3)
    { name: "loopback any port", registered: ["http://127.0.0.1/cb"], presented: "http://127.0.0.1:51234/cb", matched: "http://127.0.0.1/cb" },
    { name: "loopback registered port replaced", registered: ["http://127.0.0.1:8080/cb"], presented: "http://127.0.0.1:9999/cb", matched: "http://127.0.0.1:8080/cb" },
    { name: "loopback registered port dropped", registered: ["http://127.0.0.1:8080/cb"], presented: "http://127.0.0.1/cb", matched: "http://127.0.0.1:8080/cb" },
    { name: "loopback [::1] any port", registered: ["http://[::1]/cb"], presented: "http://[::1]:4000/cb", matched: "http://[::1]/cb" },
    { name: "loopback localhost any port", registered: ["http://localhost/callback"], presented: "http://localhost:33418/callback", matched: "http://localhost/callback" },
    { name: "loopback with identical query", registered: ["http://127.0.0.1/cb?x=1"], presented: "http://127.0.0.1:5/cb?x=1", matched: "http://127.0.0.1/cb?x=1" },
    { name: "loopback host swap", registered: ["http://127.0.0.1/cb"], presented: "http://localhost:5/cb", matched: undefined },
    { name: "loopback IPv4 to IPv6 swap", registered: ["http://[::1]/cb"], presented: "http://127.0.0.1:4000/cb", matched: undefined },
    { name: "loopback path differs (trailing slash)", registered: ["http://127.0.0.1/cb"], presented: "http://127.0.0.1:5/cb/", matched: undefined },
    { name: "loopback query added", registered: ["http://127.0.0.1/cb"], presented: "http://127.0.0.1:5/cb?x=1", matched: undefined },
    { name: "loopback query differs", registered: ["http://127.0.0.1/cb?x=1"], presented: "http://127.0.0.1:5/cb?x=2", matched: undefined },
    { name: "loopback fragment added", registered: ["http://127.0.0.1/cb"], presented: "http://127.0.0.1:5/cb#f", matched: undefined },
    { name: "loopback uppercase scheme", registered: ["http://127.0.0.1/cb"], presented: "HTTP://127.0.0.1:5/cb", matched: undefined },
    { name: "loopback zero-padded address", registered: ["http://127.0.0.1/cb"], presented: "http://127.000.000.001:5/cb", matched: undefined },
    { name: "loopback dot segments", registered: ["http://127.0.0.1/cb"], presented: "http://127.0.0.1:5/x/../cb", matched: undefined },
    { name: "loopback userinfo", registered: ["http://127.0.0.1/cb"], presented: "http://u@127.0.0.1:5/cb", matched: undefined },
    { name: "loopback port 0", registered: ["http://127.0.0.1/cb"], presented: "http://127.0.0.1:0/cb", matched: undefined },
    { name: "loopback port 65536", registered: ["http://127.0.0.1/cb"], presented: "http://127.0.0.1:65536/cb", matched: undefined },
    { name: "loopback empty port", registered: ["http://127.0.0.1/cb"], presented: "http://127.0.0.1:/cb", matched: undefined },
    { name: "loopback registered https is not exempt", registered: ["https://localhost/cb"], presented: "https://localhost:5/cb", matched: undefined },
    { name: "custom scheme exact", registered: ["com.example.app:/cb"], presented: "com.example.app:/cb", matched: "com.example.app:/cb" },
    { name: "custom scheme trailing slash", registered: ["com.example.app:/cb"], presented: "com.example.app:/cb/", matched: undefined },
    { name: "OOB exact", registered: ["urn:ietf:wg:oauth:2.0:oob"], presented: "urn:ietf:wg:oauth:2.0:oob", matched: "urn:ietf:wg:oauth:2.0:oob" },
    { name: "nothing registered", registered: [], presented: "http://127.0.0.1/cb", matched: undefined }
  ]

  it.each(cases)("$name", ({ registered, presented, matched }) => {
    expect(matchRedirectUri(registered, presented)).toBe(matched)
  })
})

describe("redirectTarget", () => {
  const cases: ReadonlyArray<{ readonly uri: string; readonly target: RedirectTarget }> = [
    { uri: "https://app.example/cb", target: { kind: "https", host: "app.example" } },
    { uri: "https://app.example:8443/cb", target: { kind: "https", host: "app.example:8443" } },
    { uri: "http://127.0.0.1:51234/cb", target: { kind: "loopback", origin: "http://127.0.0.1:51234" } },
    { uri: "http://[::1]/cb", target: { kind: "loopback", origin: "http://[::1]" } },
    { uri: "http://localhost:3000/callback", target: { kind: "loopback", origin: "http://localhost:3000" } },
    { uri: "com.example.app:/cb", target: { kind: "custom", scheme: "com.example.app" } },
    { uri: "urn:ietf:wg:oauth:2.0:oob", target: { kind: "oob" } }
  ]

  it.each(cases)("$uri", ({ uri, target }) => {
    expect(redirectTarget(uri)).toStrictEqual(target)
  })
})
