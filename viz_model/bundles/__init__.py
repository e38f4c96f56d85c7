"""Saved models: file checks shared by both formats (files), our bundle format with its
snapshots and history (checkpoint), GPT-2 folders from Hugging Face (gpt2_folder), and the one
entry point that opens either (load.load_bundle)."""
