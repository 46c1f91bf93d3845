/**
 * ClientDocument's rules (docs/decisions/oauth.md "Client ID Metadata Documents: …"): which client_id URLs may be
 * fetched, what an answer must be to be used, and how long it is kept — each a table of named cases, plus hostile
 * client_ids and bodies that must be refused without throwing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Either } from "effect"
import fc from "fast-check"
import {
  documentTtl,
  isDocumentClientId,
  validateClientDocument,
  validateDocumentUrl
} from "../../../src/services/oauth/ClientDocument.js"

const URL_OK = "https://app.example/oauth/client.json"
const answer = (body: unknown, overrides: { status?: number; contentType?: string } = {}) => ({
  status: overrides.status ?? 200,
  contentType: overrides.contentType ?? "application/json",
  body: Buffer.from(typeof body === "string" ? body : JSON.stringify(body))
})
const doc = (extra: Record<string, unknown> = {}) => ({
  client_id: URL_OK,
  client_name: "App",
  redirect_uris: ["http://127.0.0.1/cb"],
  ...extra
})

describe("validateDocumentUrl", () => {
  it.each([URL_OK, "https://app.example:8443/c.json", "https://app.example/c?v=1", "https://vscode.dev/oauth/client-metadata.json"])(
    "accepts %s",
    (url) => expect(Either.isRight(validateDocumentUrl(url))).toBe(true)
  )
  it.each([
    ["http", "http://app.example/c.json"],
    ["no path", "https://app.example"],
    ["root path", "https://app.example/"],
    ["a fragment", "https://app.example/c.json#x"],
    ["an empty fragment", "https://app.example/c.json#"],
    ["userinfo", "https://u:p@app.example/c.json"],
    ["empty userinfo", "https://@app.example/c.json"],
    ["a dot segment", "https://app.example/a/../c.json"],
    ["a single dot segment", "https://app.example/./c.json"],
    ["uppercase host", "https://APP.example/c.json"],
    ["default port", "https://app.example:443/c.json"],
    ["a space", "https://app.example/c .json"],
    ["non-ASCII", "https://app.example/é.json"],
    ["a backslash", "https://app.example\\@evil.example/c.json"],
    ["over 2000 characters", `https://app.example/${"a".repeat(2000)}`]
  ])("refuses %s", (_name, url) => expect(Either.isLeft(validateDocumentUrl(url))).toBe(true))

  it("hostile strings are refused or accepted, never thrown on", () => {
    fc.assert(fc.property(fc.string({ unit: "binary", maxLength: 300 }), (tail) => {
      const result = validateDocumentUrl(`https://app.example/${tail}`)
      expect(Either.isLeft(result) || result.right.href === `https://app.example/${tail}`).toBe(true)
    }))
  })

  it("only https client_ids are documents; registered ids never are", () => {
    expect(isDocumentClientId(URL_OK)).toBe(true)
    expect(isDocumentClientId("http://app.example/c.json")).toBe(false)
    expect(isDocumentClientId("Qm9ndXNfY2xpZW50X2lkXzEyMw")).toBe(false)
  })
})

describe("validateClientDocument", () => {
  it("accepts a document and keeps only what it uses", () => {
    const result = validateClientDocument(URL_OK, answer(doc({ client_uri: "https://app.example", logo_uri: "https://app.example/l.png", scope: "x" })))
    expect(result).toStrictEqual(Either.right({
      clientId: URL_OK,
      clientName: "App",
      redirectUris: ["http://127.0.0.1/cb"],
      clientUri: "https://app.example",
      logoUri: "https://app.example/l.png"
    }))
  })
  it.each([
    ["HTTP 301", answer(doc(), { status: 301 })],
    ["HTTP 404", answer(doc(), { status: 404 })],
    ["text/html", answer(doc(), { contentType: "text/html" })],
    ["not JSON", answer("{")],
    ["an array", answer([doc()])],
    ["another client_id", answer(doc({ client_id: "https://app.example/other.json" }))],
    ["client_id with another case", answer(doc({ client_id: URL_OK.toUpperCase() }))],
    ["no client_id", answer(doc({ client_id: undefined }))],
    ["no client_name", answer(doc({ client_name: undefined }))],
    ["a right-to-left override in the name", answer(doc({ client_name: "App\u202E" }))],
    ["no redirect_uris", answer(doc({ redirect_uris: undefined }))],
    ["an http redirect off loopback", answer(doc({ redirect_uris: ["http://app.example/cb"] }))],
    ["a dot-less custom scheme (Cursor's)", answer(doc({ redirect_uris: ["cursor://anysphere.cursor-mcp/oauth/callback"] }))],
    ["a client secret", answer(doc({ client_secret: "s" }))],
    ["private_key_jwt", answer(doc({ token_endpoint_auth_method: "private_key_jwt" }))],
    ["an http logo", answer(doc({ logo_uri: "http://app.example/l.png" }))],
    ["invalid UTF-8", { status: 200, contentType: "application/json", body: Buffer.from([0x7b, 0xff, 0x7d]) }],
    ["deep nesting", answer(`${"[".repeat(100)}${"]".repeat(100)}`)]
  ])("refuses %s", (_name, a) => expect(Either.isLeft(validateClientDocument(URL_OK, a))).toBe(true))

  it("hostile bodies are refused, never thrown on", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
      expect(Either.isLeft(validateClientDocument(URL_OK, { status: 200, contentType: "application/json", body: Buffer.from(bytes) }))).toBe(true)
    }))
  })
})

describe("documentTtl", () => {
  it.each([
    ["no header: 5 minutes", undefined, 300],
    ["max-age=3600", "public, max-age=3600", 3600],
    ["s-maxage", "s-maxage=120", 120],
    ["max-age=0: the 1-minute floor", "max-age=0", 60],
    ["no-store: the floor", "no-store", 60],
    ["no-cache: the floor", "no-cache, max-age=900", 60],
    ["a week: the 24-hour ceiling", "max-age=604800", 86400],
    ["garbage: the default", "max-age=soon", 300]
  ])("%s", (_name, header, seconds) => expect(Duration.toSeconds(documentTtl(header))).toBe(seconds))
})
