#!/usr/bin/env bash
# The TUI in tmux over a build, captured as text (docs/captures/): at COLSxROWS, the first
# screen, a no-match search, then 'aqua' typed (the app stays, the query edits), a normal
# search, and `p` (full-screen preview below 90 columns, the pane beside the list above).
#   scripts/tui_captures.sh BUILD OUTDIR [COLSxROWS ...]      (default: 80x24 160x48)
# Needs tmux and the venv's python on PATH (or PYTHON=...). Timings in the status line vary.
set -euo pipefail
build=$1; out=$2; shift 2
sizes=("${@:-80x24}"); [ $# -eq 0 ] && sizes=(80x24 160x48)
python=${PYTHON:-python}
mkdir -p "$out"
wait_for() {  # wait_for SESSION TEXT: until the pane shows TEXT (60 s at most)
  for _ in $(seq 600); do
    tmux capture-pane -p -t "$1" | grep -qF -- "$2" && return 0; sleep 0.1
  done
  echo "timed out waiting for '$2' in $1" >&2; return 1
}
for size in "${sizes[@]}"; do
  cols=${size%x*}; rows=${size#*x}; s="mm-capture-$size-$$"
  tmux new-session -d -s "$s" -x "$cols" -y "$rows" \
    "MAMBOMEME_WARM=0 $python -m mambomeme.cli tui --build '$build'"
  wait_for "$s" "sem:ready"; sleep 0.5
  shot() { tmux capture-pane -p -t "$s" > "$out/$size-$1.txt"; }
  [ "$cols" -lt 90 ] && shot 1-first-screen
  tmux send-keys -t "$s" -l "zzqxv wibblefrotz"; tmux send-keys -t "$s" Enter
  wait_for "$s" "no confident match"; sleep 0.3
  [ "$cols" -lt 90 ] && shot 2-no-match
  tmux send-keys -t "$s" -l "aqua"; sleep 0.5
  if [ "$cols" -lt 90 ]; then shot 3-no-match-then-aqua; else shot 1-no-match-then-aqua; fi
  tmux send-keys -t "$s" C-u; tmux send-keys -t "$s" -l "john cena wifi"
  tmux send-keys -t "$s" Enter
  wait_for "$s" "results"; sleep 0.5
  if [ "$cols" -lt 90 ]; then
    shot 4-results
    tmux send-keys -t "$s" p; sleep 0.5; shot 5-p-full-screen-preview
  else
    shot 2-results-with-preview
  fi
  tmux kill-session -t "$s"
done
