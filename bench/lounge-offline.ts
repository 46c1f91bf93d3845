/**
 * Preloaded into The Lounge by section B2 only (bench/lib/TheLounge.ts), next to gc-on-signal.ts. At start The Lounge
 * checks GitHub for a newer release (its changelog plugin, through `got`); on a machine without internet access got
 * retries and then throws from a timer ("The `onCancel` handler was attached after the promise settled") and leaves its
 * RequestError (getaddrinfo ENOTFOUND api.github.com) unhandled, either of which ends the process. Errors thrown by
 * `got` (the only HTTP client that runs at idle: link previews are off) are reported and ignored, so The Lounge runs
 * offline as it does online; any other uncaught error still ends it. Concurrency: a process event handler on the
 * event loop.
 */
const UPDATE_CHECK_CRASH = "The `onCancel` handler was attached after the promise settled"

const fromGot = (error: unknown) =>
  error instanceof Error &&
  (error.message.includes(UPDATE_CHECK_CRASH) || error.name === "RequestError" || (error.stack ?? "").includes("/node_modules/got/"))

process.on("uncaughtException", (error) => {
  if (fromGot(error)) {
    process.stderr.write(`bench: ignored The Lounge's failed update check (no internet access): ${error.message}\n`)
    return
  }
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`)
  process.exit(1)
})
export {}
