import { describe, expect, it } from "@effect/vitest"
import { Either, ParseResult, Schema } from "effect"
import {
  BufferTarget,
  IrcParam,
  IrcText,
  IsoTime,
  MessageId,
  ID_MAX,
  NetworkId,
  NonEmptyIrcText,
  serverBufferTarget,
  toIsoTime
} from "../../src/schema/Ids.js"
import { toJsonSchema } from "../../src/schema/ToolCatalog.js"

const problem = <A, I>(schema: Schema.Schema<A, I>, u: unknown): string | undefined => {
  const result = Schema.decodeUnknownEither(schema)(u)
  return Either.isRight(result)
    ? undefined
    : ParseResult.ArrayFormatter.formatErrorSync(result.left).map((issue) => issue.message).join("; ")
}

describe("ids", () => {
  it("publish as a plain integer schema with a description and no $ref", () => {
    expect(toJsonSchema(NetworkId)).toEqual({
      type: "integer",
      minimum: 1,
      maximum: ID_MAX,
      description: "Network id, as listed by list_networks."
    })
    expect(toJsonSchema(MessageId)).toMatchObject({ type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER })
  })

  it.each([
    { input: 1, expected: undefined },
    { input: ID_MAX, expected: undefined },
    { input: 0, expected: "must be an integer from 1 to 9007199254740991, got 0" },
    { input: -3, expected: "must be an integer from 1 to 9007199254740991, got -3" },
    { input: 1.5, expected: "must be an integer from 1 to 9007199254740991, got 1.5" },
    { input: "1", expected: "must be an integer from 1 to 9007199254740991, got \"1\"" },
    { input: 2 ** 53, expected: "must be an integer from 1 to 9007199254740991, got 9007199254740992" },
    { input: null, expected: "must be an integer from 1 to 9007199254740991, got null" }
  ])("NetworkId $input", ({ expected, input }) => {
    expect(problem(NetworkId, input)).toBe(expected)
  })

  it("a context description keeps the bounds and the message", () => {
    const described = NetworkId.annotations({ description: "Network to send on." })
    expect(toJsonSchema(described)).toEqual({
      type: "integer",
      minimum: 1,
      maximum: ID_MAX,
      description: "Network to send on."
    })
    expect(problem(described, 0)).toBe("must be an integer from 1 to 9007199254740991, got 0")
  })
})

describe("IsoTime", () => {
  it("is what Date#toISOString gives, published as date-time", () => {
    expect(toIsoTime(new Date(Date.UTC(2025, 0, 31, 12)))).toBe("2025-01-31T12:00:00.000Z")
    expect(toJsonSchema(IsoTime)).toEqual({ type: "string", format: "date-time", description: "ISO-8601 UTC time." })
  })

  it.each([
    ["2025-01-31T12:00:00.000Z", true],
    ["2025-01-31T12:00:00Z", true],
    ["2025-01-31 12:00:00+00", false],
    ["2025-01-31T12:00:00+01:00", false],
    ["yesterday", false]
  ] as const)("%s accepted: %s", (input, accepted) => {
    expect(problem(IsoTime, input) === undefined).toBe(accepted)
  })
})

describe("IRC strings", () => {
  const LINE = "must not contain CR, LF or NUL (they would end or split the IRC line)"
  it.each([
    { name: "IrcText plain", schema: IrcText, input: "hello: world", expected: undefined },
    { name: "IrcText empty", schema: IrcText, input: "", expected: undefined },
    { name: "IrcText CR", schema: IrcText, input: "a\rb", expected: LINE },
    { name: "IrcText LF", schema: IrcText, input: "a\nQUIT", expected: LINE },
    { name: "IrcText NUL", schema: IrcText, input: "a\0b", expected: LINE },
    { name: "IrcText number", schema: IrcText, input: 5, expected: "must be a string, got 5" },
    { name: "NonEmptyIrcText empty", schema: NonEmptyIrcText, input: "", expected: "must not be empty" },
    { name: "NonEmptyIrcText LF", schema: NonEmptyIrcText, input: "\n", expected: LINE },
    { name: "IrcParam channel", schema: IrcParam, input: "#chan", expected: undefined },
    { name: "IrcParam space", schema: IrcParam, input: "#a b", expected: "must not contain spaces" },
    { name: "IrcParam colon", schema: IrcParam, input: ":x", expected: "must not start with ':'" },
    { name: "IrcParam inner colon", schema: IrcParam, input: "a:b", expected: undefined },
    { name: "IrcParam CRLF", schema: IrcParam, input: "#a\r\nQUIT", expected: LINE },
    { name: "IrcParam empty", schema: IrcParam, input: "", expected: "must not be empty" },
    { name: "BufferTarget server buffer", schema: BufferTarget, input: serverBufferTarget(3), expected: undefined },
    { name: "BufferTarget space", schema: BufferTarget, input: "a b", expected: "must not contain spaces" },
    { name: "BufferTarget NUL", schema: BufferTarget, input: "a\0", expected: LINE }
  ])("$name", ({ expected, input, schema }) => {
    expect(problem(schema, input)).toBe(expected)
  })

  it("publish patterns that refuse what the Schema refuses", () => {
    const pattern = (schema: Schema.Schema<string>) => new RegExp(String(toJsonSchema(schema)["pattern"]), "u")
    for (const bad of ["a\rb", "a\nb", "a\0b"]) {
      expect(pattern(IrcText).test(bad)).toBe(false)
      expect(pattern(IrcParam).test(bad)).toBe(false)
      expect(pattern(BufferTarget).test(bad)).toBe(false)
    }
    expect(pattern(IrcParam).test(":x")).toBe(false)
    expect(pattern(IrcParam).test("#a b")).toBe(false)
    expect(pattern(BufferTarget).test(":server:1")).toBe(true)
    expect(pattern(IrcText).test("hello world")).toBe(true)
  })
})
