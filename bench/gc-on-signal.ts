/**
 * Preloaded into Belay (`node --expose-gc --import …/gc-on-signal.js bin/belay serve`) by the memory section only:
 * on SIGUSR2 it runs full garbage collections, so the heap and RSS read from /metrics right after are live memory,
 * not garbage awaiting collection. Nothing else; Belay itself is unchanged. Concurrency: a signal handler on the
 * event loop.
 */
process.on("SIGUSR2", () => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) return
  for (let i = 0; i < 4; i++) gc()
})
export {}
