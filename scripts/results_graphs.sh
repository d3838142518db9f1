# Sourced by scripts/learner_results.sh and scripts/search_budget.sh: issue 5's results graphs.
# Needs $bin (the doppler binary) and $out (the output folder); writes the generated Llama blocks
# there and defines `setups`, one "name|graph file|cluster|model" line per graph: the six DOPPLER
# paper graphs (simple model, as the paper measured) and the generated blocks (wc model).
P=workloads/doppler-paper
"$bin" workload llama-block -q -o "$out/llama-block.json"
"$bin" workload llama-block --preset llama-7b -q -o "$out/llama7b-block.json"
setups=(
  "chainmm|$P/chain_mm_112nodes.txt|doppler-paper:4|simple"
  "ffnn|$P/ffnn_192nodes.txt|doppler-paper:4|simple"
  "llama-block-paper|$P/transformer_block_215nodes.txt|doppler-paper:4|simple"
  "llama-layer-paper|$P/full_transformer_layer_261nodes.txt|doppler-paper:4|simple"
  "llama-block-paper8|$P/8gpu_transformer_block.txt|doppler-paper:8|simple"
  "llama-layer-paper8|$P/8gpu_full_transformer.txt|doppler-paper:8|simple"
  "llama-block-p100x4|$out/llama-block.json|p100x4|wc"
  "llama-block-dgx1|$out/llama-block.json|dgx1-v100|wc"
  "llama7b-block-p100x4|$out/llama7b-block.json|p100x4|wc"
  "llama7b-block-dgx1|$out/llama7b-block.json|dgx1-v100|wc"
)
