"""Input request traces: the logs that drive a run (not `kvviz.trace.Trace`, a run's output
timeline). The one place where they are read; nothing here imports a mechanism or the replay.

- Every format by name: the registry in formats/ (one record each: its readers and whether
  `--format auto` recognises it), which `kvviz replay` and a scenario's trace file read through.
- As object requests for a cache replay (`objects.Requests`), any format by content:
  `reader.read_trace` over csv_format (time,id,size or by field numbers), text_ids and
  oracle_general (libCacheSim's), blocks (Mooncake/Qwen JSONL as KV blocks), zstd.
- As LLM requests with their prompts' block hashes (`prompts.PromptRequests`): Mooncake and
  Qwen/Bailian JSONL (jsonl: the line reader and field checks) and kvviz's plain CSV/JSONL
  (plain), in time order.
- As multi-turn conversations (`conversations.Conversations`): Qwen/Bailian parent chains,
  Mooncake sessions reconstructed from shared prefixes (conversations), conversation logs
  (conversation_log).

Bad input raises kvviz.errors.ScenarioError naming the file and the line (or byte, or field).
"""
