import { describe, expect, it } from "@effect/vitest"
import { Duration } from "effect"
import * as Limits from "../../src/schema/Limits.js"

// spec/interface.md "Limits" and CONTRACT "Protocol decisions", transcribed.
describe("Limits", () => {
  it.each([
    ["RECENT_MESSAGES_DEFAULT_LIMIT", 100],
    ["RECENT_MESSAGES_MAX_LIMIT", 500],
    ["SEARCH_MESSAGES_DEFAULT_LIMIT", 50],
    ["SEARCH_MESSAGES_MAX_LIMIT", 100],
    ["LIST_MEMBERS_DEFAULT_LIMIT", 200],
    ["LIST_MEMBERS_MAX_LIMIT", 1000],
    ["NICK_NOTE_MAX_LENGTH", 4096],
    ["CLIENT_NAME_MAX_LENGTH", 60],
    ["REDIRECT_URIS_MAX_TOTAL_LENGTH", 2000],
    ["CLIENT_URI_MAX_LENGTH", 2000],
    ["STATE_MAX_LENGTH", 1024],
    ["CODE_VERIFIER_MIN_LENGTH", 43],
    ["CODE_VERIFIER_MAX_LENGTH", 128],
    ["REGISTRATIONS_PER_IP", 5],
    ["PENDING_REGISTRATIONS_CAP", 1000],
    ["MCP_BODY_LIMIT_BYTES", 1_048_576],
    ["OAUTH_BODY_LIMIT_BYTES", 16_384]
  ] as const)("%s = %i", (name, value) => {
    expect(Limits[name]).toBe(value)
  })

  it.each([
    ["REGISTRATION_RATE_WINDOW", 10 * 60_000],
    ["UNAPPROVED_REGISTRATION_LIFETIME", 60 * 60_000],
    ["AUTHORIZATION_CODE_LIFETIME", 10 * 60_000]
  ] as const)("%s = %i ms", (name, millis) => {
    expect(Duration.toMillis(Limits[name])).toBe(millis)
  })
})
