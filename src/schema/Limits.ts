// Limits: every number of the interface's Limits table (spec/interface.md "Limits") and of
// CONTRACT.md "Protocol decisions", in one block, so that Schemas, services and HTTP read
// the same value. Pure constants; no state, safe to import from anywhere.
import { Duration } from "effect"

// --- MCP tools (interface "Limits"; CONTRACT: out of range is refused, never clamped) ---
export const RECENT_MESSAGES_DEFAULT_LIMIT = 100
export const RECENT_MESSAGES_MAX_LIMIT = 500
export const SEARCH_MESSAGES_DEFAULT_LIMIT = 50
export const SEARCH_MESSAGES_MAX_LIMIT = 100
export const LIST_MEMBERS_DEFAULT_LIMIT = 200
export const LIST_MEMBERS_MAX_LIMIT = 1000
/** Nick note length in characters (Unicode code points, as JSON Schema's maxLength counts). */
export const NICK_NOTE_MAX_LENGTH = 4096

// --- OAuth registration (RFC 7591 endpoint) ---
/** client_name length in Unicode code points (CONTRACT "Protocol decisions"). */
export const CLIENT_NAME_MAX_LENGTH = 60
/** Sum of the lengths of all redirect_uris of one registration. */
export const REDIRECT_URIS_MAX_TOTAL_LENGTH = 2000
export const CLIENT_URI_MAX_LENGTH = 2000
/** Accepted registrations per client IP within REGISTRATION_RATE_WINDOW, then 429 with Retry-After. */
export const REGISTRATIONS_PER_IP = 5
export const REGISTRATION_RATE_WINDOW: Duration.Duration = Duration.minutes(10)
/** Registrations waiting for approval; at the cap every registration gets 429 temporarily_unavailable. */
export const PENDING_REGISTRATIONS_CAP = 1000
/** An unapproved registration is deleted after this; its client_id then yields invalid_client. */
export const UNAPPROVED_REGISTRATION_LIFETIME: Duration.Duration = Duration.hours(1)

// --- OAuth authorization (RFC 7636 §4.1 for the verifier) ---
export const STATE_MAX_LENGTH = 1024
export const CODE_VERIFIER_MIN_LENGTH = 43
export const CODE_VERIFIER_MAX_LENGTH = 128
/** Single use; bound to client_id, redirect_uri and the PKCE challenge. */
export const AUTHORIZATION_CODE_LIFETIME: Duration.Duration = Duration.minutes(10)

// --- HTTP request bodies (CONTRACT "Protocol decisions": beyond → 413 with a JSON body) ---
export const MCP_BODY_LIMIT_BYTES = 1024 * 1024
export const OAUTH_BODY_LIMIT_BYTES = 16 * 1024
