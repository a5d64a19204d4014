"""Published figures that npudist.plan's predictions are checked against: the data only.

This file holds, with their public sources, the rows the planner's validation uses. It was written before
any prediction was run, so the list of check rows is fixed independently of how well they come out.

What is here
------------
CALIBRATION_ROWS
    The two rows the planner calibrates at most two global factors on: LLaMA2-7B (8 NPUs, TP1 PP2, seq 4096,
    mbs 1, gbs 256, distributed optimizer: 4733 tokens/s/NPU) and LLaMA2-13B (8 NPUs, TP8 PP1, seq 4096,
    mbs 4, gbs 512: 2209), each checked against the example script of the commit below.
CHECK_ROWS
    Every other dense decoder row of MindSpeed-LLM's README table (column 性能, tokens per second per NPU,
    "Atlas 900 A2 PODc") at COMMIT whose configuration that commit's example pretrain scripts give and that
    the planner's ``python -m npudist.plan model --family llama ...`` can express: RMSNorm, RoPE, grouped-query or
    multi-head attention with head_dim = hidden / heads, a gated MLP (SwiGLU or GeGLU: the same GEMMs),
    fused attention, no context parallelism, and the script's cluster equal to the README's. Differences
    from that family which change FLOPs and memory by little are kept and listed in ``deviations``
    (``qkv_bias``; ``tied_embeddings``; ``alibi`` inside fused attention; GLM's partial rotary; Gemma's
    norm offset; MiniCPM's embedding scaling). The calibration rows are not repeated here: the mean
    absolute percentage error and Spearman correlation of the validation are computed over CHECK_ROWS, out of sample.
LEFT_OUT
    Every other row of that table, each with its reason (MoE; context parallel; the script's cluster
    differs from the README's; an architecture outside the family; no script).
TOKENIZER_VOCAB
    Where a script takes its vocabulary from the tokenizer (``vocab_from='tokenizer'``), the tokenizer's
    size and where it is published; ``vocab`` is then padded as Megatron does: up to a multiple of
    ``--make-vocab-size-divisible-by`` x TP.
COLLECTIVE_ROWS
    Published intra-node collective bandwidths of 8x910B nodes at 2, 4 and 8 NPUs (the planner's collective check).
PARAMETER_COUNTS
    Published parameter counts and architectures of LLaMA2-7B/13B/70B and LLaMA3-8B (the built-in
    LLaMA family must match them within 1 %).

Row fields (CALIBRATION_ROWS, CHECK_ROWS)
-----------------------------------------
id, model, size, seq_label, impl ('Mcore' or 'Legacy': the README's 实现 column), cluster ('NxM': N nodes of
M NPUs, as the README writes it), published_tokens_per_s_per_npu (性能), readme_line (line of that figure
in README.md at COMMIT), reference_tokens_per_s_per_npu (the README's 参考 column, a reference figure whose
hardware the README does not name; None for '--'), seq (tokens), nodes, npus_per_node, and from the script:
hidden, layers, heads, kv_heads (= --num-query-groups with --group-query-attention, else heads), ffn
(--ffn-hidden-size), vocab (padded), vocab_unpadded, vocab_from ('script' or 'tokenizer'), tp, pp,
vpp_layers (--num-layers-per-virtual-pipeline-stage, None if unset), dp (derived: NPUs / (tp x pp)),
mbs, gbs, sequence_parallel (the flag as written; Megatron ignores it when tp == 1), recompute (None, or
granularity/method/num_layers as the script sets them), distributed_optimizer, flash_attention
(--use-flash-attn: MindSpeed runs torch_npu.npu_fusion_attention), dtype, flags (other performance flags
the script sets, e.g. use-mc2, use-fused-rmsnorm, use-fused-swiglu, use-fused-rotary-pos-emb,
overlap-grad-reduce), deviations (see above), script (path in Ascend/MindSpeed-LLM at COMMIT).

The README says its table was measured with MC2 on (an in-development feature, off by default in code, for
CANN 24RC2 and later); MC2 fuses a TP collective with the matmul beside it, so it only matters when tp > 1.

The predictor half (benchmarks/_plan_validate.py; method in docs/plan.md, "Model command" and "Published
configurations"; figures in docs/benchmarks/plan.md):

    python benchmarks/plan_validation.py --predict [--sensitivity] [--no-calibrate] [--hardware atlas800t-a2]

predicts the collective rows (algbw at 2/4/8 NPUs, goal within 10 %), calibrates at most two global factors on
CALIBRATION_ROWS only ([compute] efficiency on the TP-1 row, then [calibration] tp_comm_overlap on the TP-8 row),
predicts every CHECK_ROW with ``npudist.plan.model`` and prints predicted / published per row, the MAPE (goal
<= 15 %, stretch <= 10 %), Spearman's correlation (goal >= 0.9) and whether each predicted peak fits in 64 GiB;
it writes benchmarks/results/plan_validation.json (``--out``). About a minute; the predictions are
deterministic. ``--sensitivity`` also moves each unsourced hardware value across its plausible range.

    python benchmarks/plan_validation.py --list [--json OUT]

prints every table above (and writes them as JSON).
"""

import argparse
import json
import sys

MINDSPEED_LLM = "Ascend/MindSpeed-LLM"
COMMIT = "1ea39226824d8826045224f05621cd73560492d6"  # 2024-10-24; the README's figures move between commits
README_HARDWARE = "Atlas 900 A2 PODc"  # README.md lines 86-92 at COMMIT

# The two rows the planner calibrates on (README lines 375 and 386), checked against their scripts at COMMIT
# (docs/plan_ascend_sources.md, section 5).
CALIBRATION_ROWS = [
    dict(id='llama2-7b-4k', model='LLaMA2', size='7B', seq_label='4K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=4733, readme_line=375, seq=4096, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=3850, hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=32000,
        vocab_unpadded=32000, vocab_from='tokenizer', tp=1, pp=2, vpp_layers=None, dp=4, mbs=1, gbs=256,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'overlap-grad-reduce', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/mcore/llama2/pretrain_llama2_7b_ptd.sh'),
    dict(id='llama2-13b-4k', model='LLaMA2', size='13B', seq_label='4K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=2209, readme_line=386, seq=4096, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=1920, hidden=5120, layers=40, heads=40, kv_heads=40, ffn=13824, vocab=32000,
        vocab_unpadded=32000, vocab_from='tokenizer', tp=8, pp=1, vpp_layers=None, dp=1, mbs=4, gbs=512,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/mcore/llama2/pretrain_llama2_13b_ptd.sh'),
]

# Every other dense decoder row the family can express, out of sample.
CHECK_ROWS = [
    dict(id='aquila-7b-2k', model='Aquila', size='7B', seq_label='2K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=2849, readme_line=116, seq=2048, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2874, hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=100008,
        vocab_unpadded=100008, vocab_from='tokenizer', tp=8, pp=1, vpp_layers=None, dp=1, mbs=8, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/aquila/pretrain_aquila_7b_ptd.sh'),
    dict(id='aquila2-7b-2k', model='Aquila2', size='7B', seq_label='2K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=3323, readme_line=128, seq=2048, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2673, hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=100008,
        vocab_unpadded=100008, vocab_from='tokenizer', tp=8, pp=1, vpp_layers=None, dp=1, mbs=8, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='fp16',
        flags=['use-fused-rmsnorm', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/aquila2/pretrain_aquila2_7b_ptd.sh'),
    dict(id='aquila2-34b-4k', model='Aquila2', size='34B', seq_label='4K', impl='Legacy', cluster='2x8',
        published_tokens_per_s_per_npu=854, readme_line=139, seq=4096, nodes=2, npus_per_node=8,
        reference_tokens_per_s_per_npu=732, hidden=6144, layers=60, heads=48, kv_heads=8, ffn=24576, vocab=100008,
        vocab_unpadded=100008, vocab_from='tokenizer', tp=8, pp=2, vpp_layers=None, dp=1, mbs=2, gbs=1024,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/aquila2/pretrain_aquila2_34b_ptd_16p.sh'),
    dict(id='baichuan-7b-4k', model='Baichuan', size='7B', seq_label='4K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=2685, readme_line=151, seq=4096, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2036, hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=64000,
        vocab_unpadded=64000, vocab_from='tokenizer', tp=8, pp=1, vpp_layers=None, dp=1, mbs=4, gbs=32,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='fp16',
        flags=['use-fused-rmsnorm', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/baichuan/pretrain_baichuan_ptd_7B.sh'),
    dict(id='baichuan2-7b-4k', model='Baichuan2', size='7B', seq_label='4K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=2664, readme_line=174, seq=4096, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=3969, hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=125696,
        vocab_unpadded=125696, vocab_from='tokenizer', tp=8, pp=1, vpp_layers=None, dp=1, mbs=4, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/baichuan2/pretrain_baichuan2_ptd_7B.sh'),
    dict(id='baichuan2-13b-4k', model='Baichuan2', size='13B', seq_label='4K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=1754, readme_line=185, seq=4096, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2062, hidden=5120, layers=40, heads=40, kv_heads=40, ffn=13696, vocab=125696,
        vocab_unpadded=125696, vocab_from='tokenizer', tp=8, pp=1, vpp_layers=None, dp=1, mbs=2, gbs=128,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'square-alibi-mask'],
        deviations=['alibi'], script='examples/mcore/baichuan2/pretrain_baichuan2_13b_ptd.sh'),
    dict(id='chatglm3-6b-8k', model='ChatGLM3', size='6B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=4611, readme_line=220, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=4543, hidden=4096, layers=28, heads=32, kv_heads=2, ffn=13696, vocab=65024,
        vocab_unpadded=65024, vocab_from='script', tp=1, pp=2, vpp_layers=None, dp=4, mbs=1, gbs=128,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='fp16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'overlap-grad-reduce', 'overlap-param-gather', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'use-glm-rope'],
        deviations=['qkv_bias', 'partial_rotary=0.5 (GLM RoPE)'],
        script='examples/mcore/chatglm3/pretrain_chatglm3_6B_8K.sh'),
    dict(id='glm4-9b-8k', model='GLM4', size='9B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=2221, readme_line=252, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2708, hidden=4096, layers=40, heads=32, kv_heads=2, ffn=13696, vocab=151552,
        vocab_unpadded=151552, vocab_from='script', tp=2, pp=2, vpp_layers=None, dp=2, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-mc2', 'overlap-grad-reduce', 'overlap-param-gather', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'use-glm-rope'],
        deviations=['qkv_bias', 'partial_rotary=0.5 (GLM RoPE)'],
        script='examples/mcore/glm4/pretrain_glm4_9b_8k_ptd.sh'),
    dict(id='codellama-34b-4k', model='CodeLlama', size='34B', seq_label='4K', impl='Mcore', cluster='2x8',
        published_tokens_per_s_per_npu=902, readme_line=274, seq=4096, nodes=2, npus_per_node=8,
        reference_tokens_per_s_per_npu=762, hidden=8192, layers=48, heads=64, kv_heads=8, ffn=22016, vocab=32000,
        vocab_unpadded=32000, vocab_from='script', tp=8, pp=2, vpp_layers=None, dp=1, mbs=2, gbs=1024,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=[], script='examples/mcore/codellama/pretrain_codellama_34b_ptd_16p.sh'),
    dict(id='internlm-7b-2k', model='InternLM', size='7B', seq_label='2K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=2776, readme_line=286, seq=2048, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2854, hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=103168,
        vocab_unpadded=103168, vocab_from='tokenizer', tp=8, pp=1, vpp_layers=None, dp=1, mbs=8, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-rotary-pos-emb', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=['qkv_bias'], script='examples/intern/pretrain_internlm_7b_ptd.sh'),
    dict(id='internlm-65b-2k', model='InternLM', size='65B', seq_label='2K', impl='Legacy', cluster='4x8',
        published_tokens_per_s_per_npu=341, readme_line=297, seq=2048, nodes=4, npus_per_node=8,
        reference_tokens_per_s_per_npu=414, hidden=8192, layers=80, heads=64, kv_heads=64, ffn=22016, vocab=103168,
        vocab_unpadded=103168, vocab_from='tokenizer', tp=8, pp=4, vpp_layers=None, dp=1, mbs=2, gbs=256,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-rotary-pos-emb', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=['qkv_bias'], script='examples/intern/pretrain_internlm_65b_ptd.sh'),
    dict(id='internlm2-20b-4k', model='InternLM2', size='20B', seq_label='4K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=1141, readme_line=309, seq=4096, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=1348, hidden=6144, layers=48, heads=48, kv_heads=8, ffn=16384, vocab=92544,
        vocab_unpadded=92544, vocab_from='script', tp=4, pp=2, vpp_layers=None, dp=1, mbs=2, gbs=256,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=[], script='examples/mcore/internlm2/pretrain_internlm2_20b_4k_ptd.sh'),
    dict(id='llama-7b-2k', model='LLaMA', size='7B', seq_label='2K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=3600, readme_line=330, seq=2048, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=3804, hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=32000,
        vocab_unpadded=32000, vocab_from='tokenizer', tp=1, pp=8, vpp_layers=None, dp=1, mbs=4, gbs=256,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='fp16',
        flags=['use-fused-rmsnorm', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/llama/pretrain_llama_7b_ptd.sh'),
    dict(id='llama-13b-2k', model='LLaMA', size='13B', seq_label='2K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=1895, readme_line=341, seq=2048, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2012, hidden=5120, layers=40, heads=40, kv_heads=40, ffn=13824, vocab=32000,
        vocab_unpadded=32000, vocab_from='tokenizer', tp=1, pp=8, vpp_layers=None, dp=1, mbs=1, gbs=128,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='fp16',
        flags=['use-fused-rmsnorm', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/llama/pretrain_llama_13b_ptd.sh'),
    dict(id='llama-33b-2k', model='LLaMA', size='33B', seq_label='2K', impl='Legacy', cluster='4x8',
        published_tokens_per_s_per_npu=621, readme_line=352, seq=2048, nodes=4, npus_per_node=8,
        reference_tokens_per_s_per_npu=776, hidden=6656, layers=60, heads=52, kv_heads=52, ffn=17920, vocab=32000,
        vocab_unpadded=32000, vocab_from='tokenizer', tp=4, pp=4, vpp_layers=None, dp=2, mbs=4, gbs=256,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/llama/pretrain_llama_33B_ptd_32p.sh'),
    dict(id='llama-65b-2k', model='LLaMA', size='65B', seq_label='2K', impl='Legacy', cluster='4x8',
        published_tokens_per_s_per_npu=348, readme_line=363, seq=2048, nodes=4, npus_per_node=8,
        reference_tokens_per_s_per_npu=426, hidden=8192, layers=80, heads=64, kv_heads=64, ffn=22016, vocab=32000,
        vocab_unpadded=32000, vocab_from='tokenizer', tp=8, pp=4, vpp_layers=None, dp=1, mbs=2, gbs=128,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/llama/pretrain_llama_65b_ptd.sh'),
    dict(id='llama2-34b-4k', model='LLaMA2', size='34B', seq_label='4K', impl='Mcore', cluster='2x8',
        published_tokens_per_s_per_npu=810, readme_line=397, seq=4096, nodes=2, npus_per_node=8,
        reference_tokens_per_s_per_npu=796, hidden=8192, layers=48, heads=64, kv_heads=8, ffn=22016, vocab=32000,
        vocab_unpadded=32000, vocab_from='tokenizer', tp=8, pp=2, vpp_layers=None, dp=1, mbs=2, gbs=1024,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=[], script='examples/mcore/llama2/pretrain_llama2_34B_ptd_16p.sh'),
    dict(id='llama2-70b-4k', model='LLaMA2', size='70B', seq_label='4K', impl='Mcore', cluster='4x8',
        published_tokens_per_s_per_npu=441, readme_line=408, seq=4096, nodes=4, npus_per_node=8,
        reference_tokens_per_s_per_npu=430, hidden=8192, layers=80, heads=64, kv_heads=8, ffn=28672, vocab=32000,
        vocab_unpadded=32000, vocab_from='tokenizer', tp=8, pp=4, vpp_layers=5, dp=1, mbs=1, gbs=1024,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=[], script='examples/mcore/llama2/pretrain_llama2_70b_ptd.sh'),
    dict(id='llama3-8b-8k', model='LLaMA3', size='8B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=2400, readme_line=420, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2674, hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336, vocab=128256,
        vocab_unpadded=128256, vocab_from='tokenizer', tp=8, pp=1, vpp_layers=None, dp=1, mbs=2, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=500000'],
        deviations=[], script='examples/mcore/llama3/pretrain_llama3_8b_ptd.sh'),
    dict(id='llama31-8b-8k', model='LLaMA3.1', size='8B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=2280, readme_line=443, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2520, hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336, vocab=128256,
        vocab_unpadded=128256, vocab_from='script', tp=8, pp=1, vpp_layers=None, dp=1, mbs=2, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=500000'],
        deviations=[], script='examples/mcore/llama31/pretrain_llama31_8b_8k_ptd.sh'),
    dict(id='llama31-70b-8k', model='LLaMA3.1', size='70B', seq_label='8K', impl='Mcore', cluster='4x8',
        published_tokens_per_s_per_npu=399, readme_line=464, seq=8192, nodes=4, npus_per_node=8,
        reference_tokens_per_s_per_npu=None, hidden=8192, layers=80, heads=64, kv_heads=8, ffn=28672, vocab=128256,
        vocab_unpadded=128256, vocab_from='script', tp=8, pp=4, vpp_layers=None, dp=1, mbs=1, gbs=512,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=500000'],
        deviations=[], script='examples/mcore/llama31/pretrain_llama31_70b_8k_ptd.sh'),
    dict(id='llama32-1b-8k', model='LLaMA3.2', size='1B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=15408, readme_line=476, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=18941, hidden=2048, layers=16, heads=32, kv_heads=8, ffn=8192, vocab=128256,
        vocab_unpadded=128256, vocab_from='script', tp=1, pp=1, vpp_layers=None, dp=8, mbs=2, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=500000'],
        deviations=['tied_embeddings'], script='examples/mcore/llama32/pretrain_llama32_1b_8k_ptd.sh'),
    dict(id='llama32-3b-8k', model='LLaMA3.2', size='3B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=6290, readme_line=487, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=6386, hidden=3072, layers=28, heads=24, kv_heads=8, ffn=8192, vocab=128256,
        vocab_unpadded=128256, vocab_from='script', tp=1, pp=2, vpp_layers=None, dp=4, mbs=2, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=500000'],
        deviations=['tied_embeddings'], script='examples/mcore/llama32/pretrain_llama32_3b_8k_ptd.sh'),
    dict(id='qwen-7b-8k', model='Qwen', size='7B', seq_label='8K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=2499, readme_line=499, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2867, hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=151936,
        vocab_unpadded=151851, vocab_from='tokenizer', tp=8, pp=1, vpp_layers=None, dp=1, mbs=2, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=['qkv_bias'], script='examples/qwen/pretrain_qwen_7b_ptd.sh'),
    dict(id='qwen-14b-2k', model='Qwen', size='14B', seq_label='2K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=1560, readme_line=510, seq=2048, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=1578, hidden=5120, layers=40, heads=40, kv_heads=40, ffn=13696, vocab=152064,
        vocab_unpadded=151851, vocab_from='tokenizer', tp=8, pp=1, vpp_layers=None, dp=1, mbs=4, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=['qkv_bias'], script='examples/qwen/pretrain_qwen_14b_ptd.sh'),
    dict(id='qwen15-05b-8k', model='Qwen1.5', size='0.5B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=23239, readme_line=534, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=25306, hidden=1024, layers=24, heads=16, kv_heads=16, ffn=2816, vocab=151936,
        vocab_unpadded=151936, vocab_from='script', tp=1, pp=1, vpp_layers=None, dp=8, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias', 'tied_embeddings'], script='examples/mcore/qwen15/pretrain_qwen15_0point5b_ptd.sh'),
    dict(id='qwen15-18b-8k', model='Qwen1.5', size='1.8B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=12603, readme_line=544, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=12181, hidden=2048, layers=24, heads=16, kv_heads=16, ffn=5504, vocab=151936,
        vocab_unpadded=151936, vocab_from='script', tp=1, pp=1, vpp_layers=None, dp=8, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'overlap-grad-reduce', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen15/pretrain_qwen15_1point8b_ptd.sh'),
    dict(id='qwen15-4b-8k', model='Qwen1.5', size='4B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=5221, readme_line=554, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=5328, hidden=2560, layers=40, heads=20, kv_heads=20, ffn=6912, vocab=151936,
        vocab_unpadded=151936, vocab_from='script', tp=1, pp=2, vpp_layers=None, dp=4, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=['qkv_bias'], script='examples/mcore/qwen15/pretrain_qwen15_4b_ptd.sh'),
    dict(id='qwen15-7b-8k', model='Qwen1.5', size='7B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=2951, readme_line=564, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2621, hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=151936,
        vocab_unpadded=151936, vocab_from='script', tp=8, pp=1, vpp_layers=None, dp=1, mbs=2, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen15/pretrain_qwen15_7b_ptd.sh'),
    dict(id='qwen15-14b-8k', model='Qwen1.5', size='14B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=1760, readme_line=574, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=1702, hidden=5120, layers=40, heads=40, kv_heads=40, ffn=13696, vocab=152064,
        vocab_unpadded=152064, vocab_from='script', tp=4, pp=1, vpp_layers=None, dp=2, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen15/pretrain_qwen15_14b_ptd.sh'),
    dict(id='qwen15-32b-8k', model='Qwen1.5', size='32B', seq_label='8K', impl='Mcore', cluster='4x8',
        published_tokens_per_s_per_npu=768, readme_line=584, seq=8192, nodes=4, npus_per_node=8,
        reference_tokens_per_s_per_npu=708, hidden=5120, layers=64, heads=40, kv_heads=8, ffn=27392, vocab=152064,
        vocab_unpadded=152064, vocab_from='script', tp=8, pp=4, vpp_layers=None, dp=1, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen15/pretrain_qwen15_32b_ptd.sh'),
    dict(id='qwen15-72b-8k', model='Qwen1.5', size='72B', seq_label='8K', impl='Mcore', cluster='8x8',
        published_tokens_per_s_per_npu=339, readme_line=594, seq=8192, nodes=8, npus_per_node=8,
        reference_tokens_per_s_per_npu=317, hidden=8192, layers=80, heads=64, kv_heads=64, ffn=24576, vocab=152064,
        vocab_unpadded=152064, vocab_from='script', tp=8, pp=8, vpp_layers=2, dp=1, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen15/pretrain_qwen15_72b_ptd.sh'),
    dict(id='qwen15-110b-8k', model='Qwen1.5', size='110B', seq_label='8K', impl='Mcore', cluster='8x8',
        published_tokens_per_s_per_npu=223, readme_line=604, seq=8192, nodes=8, npus_per_node=8,
        reference_tokens_per_s_per_npu=None, hidden=8192, layers=80, heads=64, kv_heads=8, ffn=49152, vocab=152064,
        vocab_unpadded=152064, vocab_from='script', tp=8, pp=8, vpp_layers=None, dp=1, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen15/pretrain_qwen15_110b_ptd.sh'),
    dict(id='codeqwen15-7b-8k', model='CodeQwen1.5', size='7B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=3146, readme_line=616, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=3866, hidden=4096, layers=32, heads=32, kv_heads=4, ffn=13440, vocab=92416,
        vocab_unpadded=92416, vocab_from='script', tp=2, pp=1, vpp_layers=None, dp=4, mbs=1, gbs=256,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'overlap-grad-reduce', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen15/pretrain_codeqwen_7b_ptd.sh'),
    dict(id='qwen2-05b-4k', model='Qwen2', size='0.5B', seq_label='4K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=28618, readme_line=629, seq=4096, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=34859, hidden=896, layers=24, heads=14, kv_heads=2, ffn=4864, vocab=151936,
        vocab_unpadded=151936, vocab_from='script', tp=1, pp=1, vpp_layers=None, dp=8, mbs=2, gbs=128,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'overlap-grad-reduce', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias', 'tied_embeddings'], script='examples/mcore/qwen2/pretrain_qwen2_0point5b_4K_ptd.sh'),
    dict(id='qwen2-15b-4k', model='Qwen2', size='1.5B', seq_label='4K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=15456, readme_line=648, seq=4096, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=15603, hidden=1536, layers=28, heads=12, kv_heads=2, ffn=8960, vocab=151936,
        vocab_unpadded=151936, vocab_from='script', tp=1, pp=1, vpp_layers=None, dp=8, mbs=2, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'overlap-grad-reduce', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias', 'tied_embeddings'], script='examples/mcore/qwen2/pretrain_qwen2_1point5b_4K_ptd.sh'),
    dict(id='qwen2-7b-4k', model='Qwen2', size='7B', seq_label='4K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=4034, readme_line=667, seq=4096, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=4241, hidden=3584, layers=28, heads=28, kv_heads=4, ffn=18944, vocab=152064,
        vocab_unpadded=152064, vocab_from='script', tp=1, pp=2, vpp_layers=None, dp=4, mbs=1, gbs=256,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'overlap-grad-reduce', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen2/pretrain_qwen2_7b_4K_ptd.sh'),
    dict(id='qwen2-7b-32k', model='Qwen2', size='7B', seq_label='32K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=2040, readme_line=676, seq=32768, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2045, hidden=3584, layers=28, heads=28, kv_heads=4, ffn=18944, vocab=152064,
        vocab_unpadded=152064, vocab_from='script', tp=4, pp=2, vpp_layers=None, dp=1, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen2/pretrain_qwen2_7b_32K_ptd.sh'),
    dict(id='qwen2-72b-4k', model='Qwen2', size='72B', seq_label='4K', impl='Mcore', cluster='4x8',
        published_tokens_per_s_per_npu=368, readme_line=696, seq=4096, nodes=4, npus_per_node=8,
        reference_tokens_per_s_per_npu=None, hidden=8192, layers=80, heads=64, kv_heads=8, ffn=29568, vocab=152064,
        vocab_unpadded=152064, vocab_from='script', tp=8, pp=4, vpp_layers=2, dp=1, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'use-mc2', 'overlap-grad-reduce', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen2/pretrain_qwen2_72b_4K_ptd.sh'),
    dict(id='qwen25-7b-32k', model='Qwen2.5', size='7B', seq_label='32K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=2177, readme_line=718, seq=32768, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=2501, hidden=3584, layers=28, heads=28, kv_heads=4, ffn=18944, vocab=152064,
        vocab_unpadded=152064, vocab_from='script', tp=4, pp=2, vpp_layers=None, dp=1, mbs=1, gbs=16,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen25/pretrain_qwen25_7b_32K_ptd.sh'),
    dict(id='qwen25-14b-32k', model='Qwen2.5', size='14B', seq_label='32K', impl='Mcore', cluster='2x8',
        published_tokens_per_s_per_npu=1061, readme_line=728, seq=32768, nodes=2, npus_per_node=8,
        reference_tokens_per_s_per_npu=None, hidden=5120, layers=48, heads=40, kv_heads=8, ffn=13824, vocab=152064,
        vocab_unpadded=152064, vocab_from='script', tp=8, pp=2, vpp_layers=None, dp=1, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen25/pretrain_qwen25_14b_32K_ptd.sh'),
    dict(id='qwen25-32b-32k', model='Qwen2.5', size='32B', seq_label='32K', impl='Mcore', cluster='4x8',
        published_tokens_per_s_per_npu=407, readme_line=738, seq=32768, nodes=4, npus_per_node=8,
        reference_tokens_per_s_per_npu=None, hidden=5120, layers=64, heads=40, kv_heads=8, ffn=27648, vocab=152064,
        vocab_unpadded=152064, vocab_from='script', tp=8, pp=4, vpp_layers=None, dp=1, mbs=1, gbs=64,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=1000000'],
        deviations=['qkv_bias'], script='examples/mcore/qwen25/pretrain_qwen25_32b_32K_ptd.sh'),
    dict(id='yi-34b-4k', model='Yi', size='34B', seq_label='4K', impl='Mcore', cluster='2x8',
        published_tokens_per_s_per_npu=855, readme_line=750, seq=4096, nodes=2, npus_per_node=8,
        reference_tokens_per_s_per_npu=730, hidden=7168, layers=60, heads=56, kv_heads=8, ffn=20480, vocab=64000,
        vocab_unpadded=64000, vocab_from='tokenizer', tp=8, pp=2, vpp_layers=None, dp=1, mbs=2, gbs=1024,
        sequence_parallel=True, recompute=None, distributed_optimizer=False, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32', 'rotary-base=5000000'],
        deviations=[], script='examples/mcore/yi/pretrain_yi_34b_ptd_16p.sh'),
    dict(id='gemma-2b-8k', model='Gemma', size='2B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=7067, readme_line=807, seq=8192, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=7602, hidden=2048, layers=18, heads=8, kv_heads=1, ffn=16384, vocab=256000,
        vocab_unpadded=256000, vocab_from='script', tp=1, pp=2, vpp_layers=None, dp=4, mbs=1, gbs=256,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-rotary-pos-emb', 'use-mc2', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=['tied_embeddings', 'geglu (same GEMM shapes as SwiGLU)', 'rmsnorm_offset (Gemma)', 'input_embeds_norm (Gemma)'],
        script='examples/mcore/gemma/pretrain_gemma_2b_ptd.sh'),
    dict(id='minicpm-2b-4k', model='MiniCPM', size='2B', seq_label='4K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=7314, readme_line=935, seq=4096, nodes=1, npus_per_node=8,
        reference_tokens_per_s_per_npu=7953, hidden=2304, layers=40, heads=36, kv_heads=36, ffn=5760, vocab=122753,
        vocab_unpadded=122753, vocab_from='script', tp=1, pp=1, vpp_layers=None, dp=8, mbs=2, gbs=32,
        sequence_parallel=True, recompute=None, distributed_optimizer=True, flash_attention=True, dtype='bf16',
        flags=['use-fused-rmsnorm', 'use-fused-swiglu', 'use-fused-rotary-pos-emb', 'overlap-grad-reduce', 'no-gradient-accumulation-fusion', 'no-masked-softmax-fusion', 'attention-softmax-in-fp32'],
        deviations=['tied_embeddings', 'embedding/residual scaling (MiniCPM scale-emb 12, dim-model-base 256)'],
        script='examples/mcore/minicpm/pretrain_minicpm_2b.sh'),
]

# Every other row of the README table, with the reason it is not checked.
LEFT_OUT = [
    dict(id='baichuan-13b-4k', model='Baichuan', size='13B', seq_label='4K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=1213, readme_line=162,
        script='examples/baichuan/pretrain_baichuan_ptd_13B.sh',
        reason="outside the planner's LLaMA family: alibi without fused attention (materialises seq x seq scores)"),
    dict(id='bloom-7b1-2k', model='Bloom', size='7B1', seq_label='2K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=2034, readme_line=197, script='examples/bloom/pretrain_bloom_ptd_7B.sh',
        reason="outside the planner's LLaMA family: alibi without fused attention (materialises seq x seq scores); LayerNorm (not RMSNorm); GELU MLP with 2 matrices (ffn = 4 x hidden); linear biases"),
    dict(id='bloom-176b-2k', model='Bloom', size='176B', seq_label='2K', impl='Legacy', cluster='12x8',
        published_tokens_per_s_per_npu=100, readme_line=208, script='examples/bloom/pretrain_bloom_176b.sh',
        reason="outside the planner's LLaMA family: alibi without fused attention (materialises seq x seq scores); LayerNorm (not RMSNorm); GELU MLP with 2 matrices (ffn = 4 x hidden); linear biases"),
    dict(id='chatglm3-6b-32k', model='ChatGLM3', size='6B', seq_label='32K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=2650, readme_line=230,
        script='examples/mcore/chatglm3/pretrain_chatglm3_6B_32K.sh',
        reason="context parallel CP=8 (ulysses_cp_algo): the planner's model command has no --cp"),
    dict(id='chatglm3-6b-64k', model='ChatGLM3', size='6B', seq_label='64K', impl='Mcore', cluster='2x8',
        published_tokens_per_s_per_npu=1724, readme_line=240,
        script='examples/mcore/chatglm3/pretrain_chatglm3_6B_64K.sh',
        reason="context parallel CP=16 (hybrid_cp_algo): the planner's model command has no --cp"),
    dict(id='glm4-9b-32k', model='GLM4', size='9B', seq_label='32K', impl='Mcore', cluster='2x8',
        published_tokens_per_s_per_npu=1482, readme_line=262,
        script='examples/mcore/glm4/pretrain_glm4_9b_32k_ptd.sh',
        reason="context parallel CP=4 (megatron_cp_algo): the planner's model command has no --cp"),
    dict(id='internlm2-20b-32k', model='InternLM2', size='20B', seq_label='32K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=4982, readme_line=318,
        script='examples/mcore/internlm2/pretrain_internlm2_20b_32k_16p_ptd .sh',
        reason="context parallel CP=2 (ulysses_cp_algo): the planner's model command has no --cp; script's cluster 2x16 differs from the README's 1x8"),
    dict(id='llama3-70b-8k', model='LLaMA3', size='70B', seq_label='8K', impl='Mcore', cluster='8x8',
        published_tokens_per_s_per_npu=353, readme_line=431,
        script='examples/mcore/llama3/pretrain_llama3_70b_ptd.sh',
        reason="script's cluster 4x8 differs from the README's 8x8"),
    dict(id='llama31-8b-128k', model='LLaMA3.1', size='8B', seq_label='128K', impl='Mcore', cluster='4x8',
        published_tokens_per_s_per_npu=1297, readme_line=453,
        script='examples/mcore/llama31/pretrain_llama31_8b_128k_ptd.sh',
        reason="context parallel CP=4 (megatron_cp_algo): the planner's model command has no --cp"),
    dict(id='qwen-72b-8k', model='Qwen', size='72B', seq_label='8K', impl='Legacy', cluster='16x8',
        published_tokens_per_s_per_npu=285, readme_line=521, script='examples/qwen/pretrain_qwen_72b_ptd.sh',
        reason="script's cluster 8x8 differs from the README's 16x8"),
    dict(id='qwen2-05b-32k', model='Qwen2', size='0.5B', seq_label='32K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=11338, readme_line=638,
        script='examples/mcore/qwen2/pretrain_qwen2_0point5b_32K_ptd.sh',
        reason="context parallel CP=2 (megatron_cp_algo): the planner's model command has no --cp"),
    dict(id='qwen2-15b-32k', model='Qwen2', size='1.5B', seq_label='32K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=7281, readme_line=657,
        script='examples/mcore/qwen2/pretrain_qwen2_1point5b_32K_ptd.sh',
        reason="context parallel CP=4 (megatron_cp_algo): the planner's model command has no --cp"),
    dict(id='qwen2-57b-a14b-4k', model='Qwen2', size='57B-A14B', seq_label='4K', impl='Mcore', cluster='8x8',
        published_tokens_per_s_per_npu=416, readme_line=686,
        script='examples/mcore/qwen2_moe/pretrain_qwen2_57b_a14b_4K_ptd.sh',
        reason='MoE (mixture of experts): not a dense decoder'),
    dict(id='qwen25-3b-32k', model='Qwen2.5', size='3B', seq_label='32K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=3704, readme_line=708,
        script='examples/mcore/qwen25/pretrain_qwen25_3b_32K_ptd.sh',
        reason="context parallel CP=4 (megatron_cp_algo): the planner's model command has no --cp"),
    dict(id='mixtral-8x7b-32k', model='Mixtral', size='8x7B', seq_label='32K', impl='Mcore', cluster='8x8',
        published_tokens_per_s_per_npu=706, readme_line=762,
        script='examples/mcore/mixtral/pretrain_mixtral_8x7b_ptd.sh',
        reason='MoE (mixture of experts): not a dense decoder'),
    dict(id='mixtral-8x22b-32k', model='Mixtral', size='8x22B', seq_label='32K', impl='Mcore', cluster='8x8',
        published_tokens_per_s_per_npu=239, readme_line=773,
        script='examples/mcore/mixtral/pretrain_mixtral_8x22b_32k_ptd.sh',
        reason='MoE (mixture of experts): not a dense decoder'),
    dict(id='mixtral-8x22b-64k', model='Mixtral', size='8x22B', seq_label='64K', impl='Mcore', cluster='8x8',
        published_tokens_per_s_per_npu=None, readme_line=784,
        script='examples/mcore/mixtral/pretrain_mixtral_8x22b_64k_ptd_C.sh',
        reason='MoE (mixture of experts): not a dense decoder'),
    dict(id='mistral-7b-32k', model='Mistral', size='7B', seq_label='32K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=2900, readme_line=795,
        script='examples/mcore/mistral/pretrain_mistral_7b_ptd.sh',
        reason="outside the planner's LLaMA family: sliding-window attention (4096 of 32768 tokens)"),
    dict(id='gemma-7b-8k', model='Gemma', size='7B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=2939, readme_line=818, script='examples/mcore/gemma/pretrain_gemma_7b_ptd.sh',
        reason="outside the planner's LLaMA family: head_dim 256 != hidden/heads 192.0"),
    dict(id='gemma2-9b-8k', model='Gemma2', size='9B', seq_label='8K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=1713, readme_line=830,
        script='examples/mcore/gemma2/pretrain_gemma2_9b_ptd.sh',
        reason="outside the planner's LLaMA family: gelu-tanh MLP activation (neither --swiglu nor --geglu); head_dim 256 != hidden/heads 224.0; interleaved sliding-window attention (4096); extra post-norms (Gemma2); logit soft-capping"),
    dict(id='gemma2-27b-8k', model='Gemma2', size='27B', seq_label='8K', impl='Mcore', cluster='2x8',
        published_tokens_per_s_per_npu=827, readme_line=841,
        script='examples/mcore/gemma2/pretrain_gemma2_27b_ptd.sh',
        reason="outside the planner's LLaMA family: gelu-tanh MLP activation (neither --swiglu nor --geglu); head_dim 128 != hidden/heads 144.0; interleaved sliding-window attention (4096); extra post-norms (Gemma2); logit soft-capping"),
    dict(id='gpt3-175b-2k', model='GPT3', size='175B', seq_label='2K', impl='Legacy', cluster='16x8',
        published_tokens_per_s_per_npu=153, readme_line=853, script='examples/gpt3/pretrain_gpt3_175B_ptd.sh',
        reason="outside the planner's LLaMA family: learned absolute position embeddings (no RoPE); LayerNorm (not RMSNorm); GELU MLP with 2 matrices (ffn = 4 x hidden); linear biases"),
    dict(id='gpt3-15b-2k', model='GPT3', size='15B', seq_label='2K', impl='Legacy', cluster='1x8',
        published_tokens_per_s_per_npu=1890, readme_line=864, script='examples/gpt3/pretrain_gpt3_15B_ptd.sh',
        reason="outside the planner's LLaMA family: learned absolute position embeddings (no RoPE); LayerNorm (not RMSNorm); GELU MLP with 2 matrices (ffn = 4 x hidden); linear biases"),
    dict(id='gpt4-4x13b-128k', model='GPT4', size='4x13B', seq_label='128K', impl='Mcore', cluster='8x8',
        published_tokens_per_s_per_npu=424, readme_line=876, script=None,
        reason='MoE (mixture of experts): not a dense decoder'),
    dict(id='gpt4-4x16b-128k', model='GPT4', size='4x16B', seq_label='128K', impl='Mcore', cluster='8x8',
        published_tokens_per_s_per_npu=351, readme_line=887, script=None,
        reason='MoE (mixture of experts): not a dense decoder'),
    dict(id='grok1-8x5b-8k', model='Grok1', size='8x5B', seq_label='8K', impl='Mcore', cluster='4x8',
        published_tokens_per_s_per_npu=1082, readme_line=899,
        script='examples/mcore/grok1/pretrain_grok1_40b_ptd.sh',
        reason='MoE (mixture of experts): not a dense decoder'),
    dict(id='deepseek-v2-60b-8k', model='DeepSeek-V2', size='60B', seq_label='8K', impl='Mcore', cluster='4x8',
        published_tokens_per_s_per_npu=1083, readme_line=911,
        script='examples/mcore/deepseek2/pretrain_deepseek2_60b_8k_ptd.sh',
        reason='MoE (mixture of experts): not a dense decoder'),
    dict(id='deepseek-v2-lite-16b-8k', model='DeepSeek-V2-Lite', size='16B', seq_label='8K', impl='Mcore',
        cluster='1x8', published_tokens_per_s_per_npu=2830, readme_line=923,
        script='examples/mcore/deepseek2_lite/pretrain_deepseek2_lite_16b_ptd_8p.sh',
        reason='MoE (mixture of experts): not a dense decoder'),
    dict(id='minicpm-8x2b-4k', model='MiniCPM', size='8x2B', seq_label='4K', impl='Mcore', cluster='1x8',
        published_tokens_per_s_per_npu=2981, readme_line=946,
        script='examples/mcore/minicpm/pretrain_minicpm_8x2b.sh',
        reason='MoE (mixture of experts): not a dense decoder'),
]

# Tokenizer sizes for rows whose script takes the vocabulary from the tokenizer (vocab_from='tokenizer'):
# the model family's published tokenizer (Hugging Face config.json vocab_size unless said otherwise).
TOKENIZER_VOCAB = {
    "Aquila": dict(size=100008, source="https://huggingface.co/BAAI/Aquila-7B (config.json vocab_size)"),
    "Aquila2": dict(size=100008, source="https://huggingface.co/BAAI/Aquila2-7B, Aquila2-34B (config.json vocab_size)"),
    "Baichuan": dict(size=64000, source="https://huggingface.co/baichuan-inc/Baichuan-7B (config.json vocab_size)"),
    "Baichuan2": dict(size=125696, source="https://huggingface.co/baichuan-inc/Baichuan2-7B-Base, -13B-Base (config.json vocab_size)"),
    "InternLM": dict(size=103168, source="https://huggingface.co/internlm/internlm-7b (config.json vocab_size); "
                     "the 65B model is not public: the same tokenizer is assumed"),
    "LLaMA": dict(size=32000, source="LLaMA's SentencePiece tokenizer, 32000 pieces (Touvron et al. 2023, arXiv:2302.13971)"),
    "LLaMA2": dict(size=32000, source="https://huggingface.co/meta-llama/Llama-2-7b-hf (config.json vocab_size); "
                   "the 34B row is CodeLlama-34b, also 32000"),
    "LLaMA3": dict(size=128256, source="https://huggingface.co/meta-llama/Meta-Llama-3-8B (config.json vocab_size)"),
    "Qwen": dict(size=151851, source="https://huggingface.co/Qwen/Qwen-7B tokenizer: 151643 regular + 208 special tokens "
                 "(config.json pads to 151936 for 7B, 152064 for 14B: the same as Megatron's padding here)"),
    "Yi": dict(size=64000, source="https://huggingface.co/01-ai/Yi-34B (config.json vocab_size)"),
}

# Published intra-node collective bandwidths of 8x910B servers (Atlas 800T A2 class). algbw_gbps is the
# nccl-tests algorithm bandwidth in GB/s (1e9 B/s): S / t with S the output size for all_gather and all_to_all
# and the buffer size for all_reduce (benchmarks/collectives.py uses the same convention); busbw follows from
# it (all_gather, all_to_all: x (n-1)/n; all_reduce: x 2(n-1)/n).
MINDSPEED = dict(repo="Ascend/MindSpeed", commit="028de58ca629d035185b00ff7d1eb7eff4f7fd48",
                 path="mindspeed/core/memory/compress/utils.py")
LIMULIDAE = dict(repo="gameofdimension/limulidae", commit="19e5996522845cc0efc2bf031dbe4ea518ff54f8", path="README.md")
_GIB = 1024**3 / 1e9
COLLECTIVE_ROWS = [
    # MindSpeed's SimulationA2 (a time model of A2 collectives used by its activation-compression feature):
    # time = bytes of args[0] / throughput, where args[0] is the output tensor of
    # torch.distributed._all_gather_base and all_to_all_single; published in GiB/s (1024**3). No message size,
    # dtype or measurement method is given.
    *[dict(source="mindspeed_simulation_a2", op=op, npus=n, algbw_gbps=round(v * _GIB, 2), published=v,
           published_unit="GiB/s", key=f"SimulationA2 {key}['{n}']", **MINDSPEED)
      for op, key, table in (("all_gather", "allgather_throughput", {2: 36, 4: 73, 8: 147}),
                             ("all_to_all", "all2all_throughput", {2: 37, 4: 69, 8: 119}))
      for n, v in table.items()],
    # limulidae: a measurement on an 8x910B node (CANN 8.0.0.beta1, torch_npu 2.4.0.post2) with
    # bench_collective.py (fp32, 0.1 MB to 8 GB, bandwidth = buffer bytes / mean time, all_gather's buffer
    # being the output); which message size the README's figure is taken at is not stated.
    *[dict(source="limulidae", op=op, npus=n, algbw_gbps=float(v), published=v, published_unit="GB/s",
           key=f"README table 节点内带宽, 910B, {n} cards, {op} 带宽GB/s", **LIMULIDAE)
      for op, table in (("all_gather", {2: 38, 4: 64, 8: 149}), ("all_reduce", {2: 18, 4: 30, 8: 72}))
      for n, v in table.items()],
]

# Published LLaMA parameter counts. published_params is the exact count of the released checkpoints
# (Hugging Face safetensors metadata: 6.74B / 13.0B / 69.0B / 8.03B; the same counts follow from the
# architecture below); the architecture is the model's config.json and MindSpeed-LLM's script at COMMIT.
PARAMETER_COUNTS = [
    dict(model="LLaMA2-7B", nominal="7B", published_params=6_738_415_616, hidden=4096, layers=32, heads=32,
         kv_heads=32, ffn=11008, vocab=32000, tied_embeddings=False,
         config="https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json",
         script="examples/mcore/llama2/pretrain_llama2_7b_ptd.sh"),
    dict(model="LLaMA2-13B", nominal="13B", published_params=13_015_864_320, hidden=5120, layers=40, heads=40,
         kv_heads=40, ffn=13824, vocab=32000, tied_embeddings=False,
         config="https://huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json",
         script="examples/mcore/llama2/pretrain_llama2_13b_ptd.sh"),
    dict(model="LLaMA2-70B", nominal="70B", published_params=68_976_648_192, hidden=8192, layers=80, heads=64,
         kv_heads=8, ffn=28672, vocab=32000, tied_embeddings=False,
         config="https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json",
         script="examples/mcore/llama2/pretrain_llama2_70b_ptd.sh"),
    dict(model="LLaMA3-8B", nominal="8B", published_params=8_030_261_248, hidden=4096, layers=32, heads=32,
         kv_heads=8, ffn=14336, vocab=128256, tied_embeddings=False,
         config="https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
         script="examples/mcore/llama3/pretrain_llama3_8b_ptd.sh"),
]


def _yn(value):
    return "y" if value else "-"


def _rows_table(rows):
    head = ("id", "NxM", "seq", "hidden", "L", "A", "G", "ffn", "vocab", "TP", "PP", "VPP", "DP", "mbs", "gbs",
            "SP", "RC", "DO", "FA", "tok/s/NPU", "deviations")
    lines = [head]
    for r in rows:
        rc = "-" if r["recompute"] is None else "/".join(str(v) for v in r["recompute"].values())
        lines.append((r["id"], r["cluster"], r["seq"], r["hidden"], r["layers"], r["heads"], r["kv_heads"], r["ffn"],
                      r["vocab"], r["tp"], r["pp"], r["vpp_layers"] or "-", r["dp"], r["mbs"], r["gbs"],
                      _yn(r["sequence_parallel"]), rc, _yn(r["distributed_optimizer"]), _yn(r["flash_attention"]),
                      r["published_tokens_per_s_per_npu"], ",".join(d.split(" ")[0] for d in r["deviations"]) or "-"))
    return _format(lines)


def _format(lines):
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)


def _predict(args):
    """The predictor half (benchmarks/_plan_validate.py): collectives, calibration, check rows, sensitivity."""
    import os
    import time

    import _plan_validate as pv
    from _results import write_json

    t0 = time.time()
    hw = pv.hardware_for(args.hardware)
    out = dict(hardware=hw.name, commit=COMMIT, source=f"{MINDSPEED_LLM}@{COMMIT} README.md (性能)")
    coll = pv.collectives(hw, COLLECTIVE_ROWS)
    out["collectives"] = coll
    print(f"collectives on {hw.name} (algbw at 1 GiB, GB/s)\n" + _format(
        [("source", "op", "NPUs", "published", "predicted", "pred/pub")]
        + [(c["source"], c["op"], c["npus"], c["published_algbw_gbps"], c["predicted_algbw_gbps"], c["ratio"])
           for c in coll]))
    within = sum(abs(c["ratio"] - 1) <= 0.10 for c in coll)
    print(f"within 10 %: {within} of {len(coll)}")
    file_eff, file_ov = hw.efficiency, pv.model_overlap(hw)
    if args.calibrate:
        eff, ov = pv.calibrate(hw, CALIBRATION_ROWS)
        print(f"\ncalibrated on the 2 calibration rows: [compute] efficiency = {eff:.4f}, "
              f"[calibration] tp_comm_overlap = {ov:.4f} (the file has {file_eff:.4f}, {file_ov:.4f})")
    else:
        eff, ov = file_eff, file_ov
        print(f"\nthe file's factors: efficiency = {eff:.4f}, tp_comm_overlap = {ov:.4f}")
    hw = pv.set_factors(hw, eff, ov)
    out["calibration"] = dict(efficiency=eff, tp_comm_overlap=ov, file_efficiency=file_eff,
                              file_tp_comm_overlap=file_ov)
    cal = pv.end_to_end(hw, CALIBRATION_ROWS)
    check = pv.end_to_end(hw, CHECK_ROWS)
    out["calibration_rows"], out["check"] = cal["rows"], check
    head = ("id", "NxM", "TP", "PP", "VPP", "DP", "mbs", "gbs", "published", "predicted", "pred/pub", "MFU",
            "peak GiB")

    def table(rows):
        return _format([head] + [(r["id"], r["cluster"], r["tp"], r["pp"], r["vpp_layers"] or "-", r["dp"], r["mbs"],
                                  r["gbs"], r["published"], f"{r['predicted']:.0f}", f"{r['ratio']:.3f}",
                                  f"{r['mfu'] * 100:.1f} %", f"{r['peak_memory_gib']:.1f}") for r in rows])
    print("\ncalibration rows (tokens/s per NPU)\n" + table(cal["rows"]))
    print(f"\ncheck rows ({len(CHECK_ROWS)}, out of sample)\n" + table(check["rows"]))
    print(f"\nMAPE {check['mape'] * 100:.1f} % (goal <= 15 %, stretch <= 10 %); within 15 %: {check['within_15']} "
          f"of {len(CHECK_ROWS)}, within 10 %: {check['within_10']}; Spearman {check['spearman']:.3f} (goal >= 0.9); "
          f"every predicted peak within 64 GiB: {check['all_fit'] and cal['all_fit']}")
    if args.sensitivity:
        sens = pv.sensitivity(hw, CHECK_ROWS)
        out["sensitivity"] = sens
        print("\nsensitivity (check rows; no re-calibration)\n" + _format(
            [("value", "at", "mean change", "largest |change|", "MAPE")]
            + [(s["what"], s["value"], f"{s['mean_change'] * 100:+.1f} %", f"{s['max_abs_change'] * 100:.1f} %",
                f"{s['mape'] * 100:.1f} %") for s in sens]))
    out["seconds"] = round(time.time() - t0, 1)
    write_json(args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                        "plan_validation.json"), out)
    return 0


def main(argv=None):
    """``--list`` prints every table of this file; ``--json OUT`` also writes them; ``--predict`` runs the
    predictor half (calibration, collectives, check rows; ``--sensitivity`` adds the assumptions' ranges).
    Returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--list", action="store_true", help="print the rows as tables")
    parser.add_argument("--json", metavar="OUT", help="write every table as JSON to OUT")
    parser.add_argument("--predict", action="store_true",
                        help="predict every row with npudist.plan (a few minutes) and write the results as JSON")
    parser.add_argument("--hardware", default="atlas800t-a2", help="hardware file or shipped name (atlas800t-a2)")
    parser.add_argument("--no-calibrate", dest="calibrate", action="store_false",
                        help="use the hardware file's efficiency and tp_comm_overlap instead of fitting them")
    parser.add_argument("--sensitivity", action="store_true",
                        help="with --predict: also move each unsourced hardware value across its plausible range")
    parser.add_argument("--out", metavar="OUT", help="--predict's JSON (default benchmarks/results/plan_validation.json)")
    args = parser.parse_args(argv)
    if not (args.list or args.json or args.predict):
        parser.error("nothing to do: use --predict, --list or --json OUT")
    if args.predict:
        return _predict(args)
    if args.list:
        print(f"Source: {MINDSPEED_LLM}@{COMMIT} README.md, column 性能 (tokens/s per NPU, {README_HARDWARE})")
        print(f"\nCALIBRATION_ROWS ({len(CALIBRATION_ROWS)})\n" + _rows_table(CALIBRATION_ROWS))
        print(f"\nCHECK_ROWS ({len(CHECK_ROWS)})\n" + _rows_table(CHECK_ROWS))
        print(f"\nLEFT_OUT ({len(LEFT_OUT)})\n" + _format(
            [("id", "NxM", "tok/s/NPU", "reason")]
            + [(r["id"], r["cluster"], r["published_tokens_per_s_per_npu"] or "-", r["reason"]) for r in LEFT_OUT]))
        print("\nCOLLECTIVE_ROWS (algbw, GB/s = 1e9 B/s)\n" + _format(
            [("source", "op", "NPUs", "algbw", "as published")]
            + [(r["source"], r["op"], r["npus"], r["algbw_gbps"], f"{r['published']} {r['published_unit']}")
               for r in COLLECTIVE_ROWS]))
        print("\nPARAMETER_COUNTS\n" + _format(
            [("model", "params", "hidden", "L", "A", "G", "ffn", "vocab")]
            + [(r["model"], f"{r['published_params']:,}", r["hidden"], r["layers"], r["heads"], r["kv_heads"],
                r["ffn"], r["vocab"]) for r in PARAMETER_COUNTS]))
    if args.json:
        data = dict(mindspeed_llm=MINDSPEED_LLM, commit=COMMIT, readme_hardware=README_HARDWARE,
                    calibration_rows=CALIBRATION_ROWS, check_rows=CHECK_ROWS, left_out=LEFT_OUT,
                    tokenizer_vocab=TOKENIZER_VOCAB, collective_rows=COLLECTIVE_ROWS,
                    parameter_counts=PARAMETER_COUNTS)
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1, ensure_ascii=False)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
