"""The tune command's ``--help`` text beyond the options: what each choice does and what it
measured, with the docs/tvm.md section that has the figures."""

EPILOG = """\
targets:
  host              LLVM for this machine's CPU (mcpu detected, e.g. znver5; all physical cores)
  jetson-agx-orin   TVM tag nvidia/jetson-agx-orin-64gb: CUDA sm_87 kernels + aarch64 host code
  jetson-agx-orin-cpu  the Orin's 12 Cortex-A78AE cores alone: LLVM aarch64-linux-gnu
                    (tune over RPC on a board or on jetson/emulated/'s emulated Orin)
  <tag>             any TVM target tag, e.g. nvidia/jetson-agx-orin-32gb
  '{"kind": ...}'   a JSON target, e.g. '{"kind": "llvm", "mcpu": "neoverse-v2", "num-cores": 8}'

tuning database:
  <tuning-dir>/<target-slug>/<model>-CxHxW/database_{workload,tuning_record}.json (MetaSchedule
  JSON database; every measured candidate is appended at once) + tuning.json (sessions, seconds).
  --trials is the TOTAL budget for the model on that target: records already in the database
  count toward it, so re-running the same command resumes an interrupted run and a larger
  --trials continues a finished one. It is a ceiling: the last batch is cut to what is left.
  The edgebench "tvm" variant applies the database automatically (option tuning_dir).

reuse across models (on unless --no-reuse):
  A task whose kernel (same workload, same target) is already in another model's database
  under --tuning-dir (or --transfer-from) starts from that database's 32 best records,
  copied in: they are measurements of this very kernel on this target, and they count toward
  --trials. ResNet-50, -101 and -152 share all 29 tasks: resnet152's 512-trial database
  gives 491 records (32 per task at most), so a 512-trial ResNet-50 session after it, with
  the same flags, runs 21 trials. Only from databases tuned in this session's layout and
  design space (as for cost-model transfer) and measured with the same caches:
  EfficientNet-B0 (one-vector) built slower networks from MobileNetV2's multi-vector records
  than without them. Each copy is replayed on this model's kernel first, its block names
  mapped to this kernel's (Relax names blocks after its variables); one that does not apply
  is left out and counted. tuning.json and every record (tuning.reused_from) say which
  databases were drawn on; tuning.json's reused_records.skipped, which were left out for
  their space.

cost-model transfer (on by default with --design-space multi-vector only):
  --transfer trains MetaSchedule's cost model, before the first search, on the measurements
  in the other models' databases for the same target (siblings of this model's database);
  --transfer-from DIR adds (or names alone) other databases; --no-transfer leaves the
  siblings out. Only databases tuned in the same layout and design space are used. It helped
  in NCHW with MetaSchedule's default space (network p50 4-5% lower over three seeds at 512
  trials), and in the multi-vector space on the Zen 5 (ResNet-152 3.0% and 4.3% faster over
  two seeds, SqueezeNet 1.1 2.5%, by the fastest call), but not in today's CPU default,
  NHWC with one-vector tiling: 8% slower with a SqueezeNet database of that kind, 75%
  slower with the NCHW ones (docs/tvm.md, "Cost-model transfer"). Only the choice of
  candidates changes; every record is still measured on this target. tuning.json records
  which databases were used.

model recipes (--recipe; default auto):
  A new database on an x86-64 CPU takes its model's recipe for every option left unset: the
  options that model's best database was tuned with, kept only where they gained on every
  CPU they were measured on (the AVX2 Zen 3, the AVX-512 Zen 4 and Zen 5, all four;
  converters/tvm/recipes.py names the experiments):
    vgg16            --conv2d winograd
    resnet152        --conv2d winograd-fit --design-space multi-vector --allocation measured
                     --runner-caches cold
    mobilenetv2_100  --design-space multi-vector
    squeezenet1_1    --design-space multi-vector --out-channels pad-pair --allocation measured
  Other models, GPUs, Arm CPUs and --layout NCHW get the plain defaults. A resumed database
  keeps the recipe it was tuned with; tuning.json and every run record's tuning block say
  which. --recipe none tunes with the plain defaults.

design space:
  On CPUs in NHWC, every conv and matmul whose output channels are a multiple of the vector
  width tiles them at exactly one vector (16 floats on AVX-512, else 8 or 4); the other loops
  are sampled as in MetaSchedule's default space. --design-space default turns it off.
  mobilenetv2_100 at 512 trials: tuner estimate 1.74 ms against 3.04 ms (seed 0,
  docs/tvm.md, "Vector-width tiling"). --design-space multi-vector (opt-in) adds a second
  sketch at two vectors where a pair divides the channels and the reduction runs over input
  channels (not depthwise convs or pools): each broadcast input then feeds two FMAs, as in
  MLAS's convs. On the Zen 5 at 512 trials: resnet152's network 0.942x, mobilenetv2_100's
  0.897x the one-vector databases' (docs/tvm.md, "Two vectors of channels").
  In both, channels-last max pools get a hand-written sketch (padding inlined, channels
  vectorised, no temporary buffers; converters/tvm/pool_schedule.py) in place of
  MetaSchedule's generic rules: squeezenet1_1's pools 0.71x alone, its network 0.995x in one
  process (docs/tvm.md, "Max pools"). --design-space default leaves pools to the generic
  rules too.

conv2d algorithm (--conv2d; default: the database's, else direct):
  winograd rewrites every 3x3 stride-1 conv with 16+ channels into F(4x4,3x3) Winograd
  (NHWC only): a quarter of the multiplies, a weight four times larger, about twice the
  tuning time. At 512 trials on a 2-core AVX2 CPU: vgg16 0.63x the direct build's p50
  (0.93x ONNX Runtime's), squeezenet1_1 0.98x, resnet152 1.01x (docs/tvm.md,
  "Winograd"). tuning.json records the choice, and builds from that database follow it.

spatial means (--spatial-mean; default: the database's, reduce for one from before the
choice, else matmul):
  In NHWC a mean over height and width (squeeze-excitation, global pooling) is one reduction
  whose channel loop sits outside its pixel loops: no schedule vectorises it. matmul computes
  it as a GEMV by a row of 1/HW, from 28x28 pixels up. EfficientNet-B0's means at 16 trials:
  0.16-0.38x the reduction's time from 28x28 up (112x112x32: 60 against 381 us); in the
  network its pool family went from 2.91x ORT's to 0.94x (docs/tvm.md, "Spatial means").
  Give an older database the GEMV form by tuning only its new tasks:
  --spatial-mean matmul --only-tasks spatial_mean --trials 80.

channel concats (--concat; default: the database's, keep for one from before the choice,
else split on CPUs, keep on GPUs, where it was not measured):
  SqueezeNet's Fire modules end in a concat along the channels, a kernel of its own that
  copies both branches. split removes such copies: a conv whose output is smaller than the
  concat it reads becomes a sum of convs over the concat's parts (the weight split by input
  channel; the add fuses into the second conv), and a max or average pool over a concat
  pools each part first. SqueezeNet 1.1 at 512 trials on a 2-core Zen 4: data
  movement 0.037 ms a call against ORT's 0.283; network p50 0.957x the kept database's, and
  0.866x with --out-channels pad too (docs/tvm.md, "Channel concats").

conv output channels (--out-channels; default: the database's, keep for one from before the
choice, else pad; NHWC only):
  A conv is vectorised over its output channels at the widest vector that divides them:
  1000 classes get 8-float tiles on AVX-512. pad zero-pads such a conv (and its bias) to
  whole vectors where that adds at most 1/16 of the channels, and slices the result back.
  SqueezeNet 1.1's 1000-class conv alone at 126 trials on a Zen 4: 761 us with 1008
  channels, 856 us with 1000 (docs/tvm.md, "Conv output channels").

the input's transpose (--input-transpose; default: the database's, kernel for one from
before the choice, else conv on CPUs, kernel on GPUs, where it was not measured; NHWC only):
  The models take NCHW images, so an NHWC build transposes the input in a kernel of its own
  before the first conv (kernel). conv has the first conv read NCHW and write NHWC instead:
  one kernel and one pass over the image fewer. Its workload differs, so give a database
  tuned before the choice the new stem by tuning it alone:
  --input-transpose conv --only-tasks fused_conv2d_add --trials N (docs/tvm.md, "The input
  read by the first conv").

trial allocation (--allocation; default uniform, or the model's recipe):
  A round gives every task one batch of candidates, then MetaSchedule's gradient rule picks
  the task with the largest expected gain. With even batches (uniform) that first round took
  29 x 17 = 493 of ResNet-152's 512 trials, and the 3x3 conv at 14x14 that holds 35% of its
  arithmetic got 51. share sizes each task's batches by its share of the network's
  arithmetic (calls x FLOPs; at least 2 candidates), and a task may take its share of the
  budget. At 512 trials, network p50 against the uniform database (one process): ResNet-152
  0.819x (that conv got 153 trials), but Swin-T 1.082x and MobileNetV2 1.210x: FLOPs miss
  the time of memory-bound kernels (layer norms, softmaxes, depthwise convs), whose batches
  shrank. So share is for networks whose time is in large convs (docs/tvm.md, "Trial
  allocation"). measured gives the first round half batches (MobileNetV2: 34 x 8 = 272 of
  512, not 510), then caps each task by its share of the time measured in that round
  (calls x best latency), which sees memory-bound kernels; the gradient rule spends the
  rest. tuning.json's allocation lists the largest measured shares and their caps. One seed
  each, network p50: ResNet-152 measured 1.02x share's, MobileNetV2 measured 1.11x
  uniform's (share: 1.21x). Inside the spread between seeds, so uniform stays the default
  (docs/tvm.md, "Trial allocation by measured time").

re-ranking (--rerank [K]; off unless asked for):
  A task's best record is the minimum over all its candidates of one ~50 ms measurement; on a
  CPU whose speed drifts, that minimum goes to a candidate measured at a fast moment. --rerank
  builds each task's K best records again, runs them 3 times each in round robin, and writes
  the fastest by median to <database>/reranked/ (rerank.json says what was measured), which
  builds apply first; the original records stay. With --trials 0 it re-ranks an existing
  database. ResNet-152's 14x14 conv after 128 more trials: its best re-ran at 1.88x its
  stored time, its 4th record at 1.00x; --rerank 8 then made the network 0.835x. On the
  512-trial database alone it changed nothing (1.009x): docs/tvm.md, "Re-ranking".

weight prefetch (--prefetch [DISTANCE]; off unless asked for; local CPU targets only):
  MetaSchedule's CPU kernels have no prefetch, and a network's convs find their weights in
  memory. --prefetch builds every tuned kernel a prefetch fits alone, without one and with an
  llvm.prefetch of its weights DISTANCE floats ahead (default 2048, prefetcht1) at two
  places (the loop that walks the weights, or outside the register tile), and times them in
  15 alternating rounds, warm and with the weights flushed. A kernel keeps the prefetch that
  cut its flushed time by 2 %+ (median of the rounds, faster in 3/4 of them; where the
  model's weights fit in the last-level cache, warm at most 1 % slower too), in
  <database>/prefetch.json, which builds apply (to the very schedules measured; a kernel
  whose record changed since gets none). No new trials; outputs are bit-identical.
  ResNet-152 (104 s): two choices kept 5 and 3 of 25 kernels, and the network ran 0.974-0.981x
  and 0.986-1.004x its own without (docs/tvm.md, "Weight prefetch").

the runner's caches (--runner-caches; default: the database's, warm for a new one):
  MetaSchedule measures a candidate warm: its weights stay in the caches from the calls
  before. In a network each layer's weights are read once per inference, from memory.
  ResNet-152 on the Zen 4: its kernels summed 103 ms warm, 111 ms cold, 112 ms in the
  network. cold flushes every argument but the data before each measured call (one call per
  measurement, 8 of them), so the tuner ranks candidates as the network runs them. A
  database keeps the way it was measured (tuning.json runner_caches), and records are
  reused only from databases measured alike. With --trials 0 --rerank K, --runner-caches
  cold re-measures a warm database's K best records cold, with no new trials. The six study
  models' databases re-ranked that way ran 0.974-1.031x their warm re-ranks (ResNet-152 and
  MobileNetV2 faster, Swin-T and SqueezeNet 1.1 slower), so warm stays the default
  (docs/tvm.md, "Cold weights in the tuner's runner"). streamed gives every measured call
  its own copy of every argument but the data, enough copies to span twice the last-level
  cache (at most 64), and times each call: the weights come from memory as in a network,
  with the prefetchers and address translations as a network leaves them, which a flush
  does not reproduce. ResNet-152's four heaviest kernels on the Zen 4, in two runs: within
  2.5 % of their network time streamed in 7 of 8 pairs, 1.6-4.1 % under it cold (14 % once;
  docs/tvm.md, "Streamed weights").
  It needs the local runner (no --rpc-tracker).

remote measurement:
  --rpc-tracker HOST:PORT --rpc-key KEY builds candidates here and measures them on the
  device registered with that key, e.g. on the Orin:
    python -m tvm.exec.rpc_server --tracker HOST:PORT --key orin
  (see docs/tvm.md).

export:
  --export DIR writes DIR/model-b<B>.so (one per --batch-sizes value) and DIR/manifest.json
  (target, TVM version, sha256 of each file, tuned or not). For jetson-agx-orin it
  cross-compiles: aarch64 host code (needs aarch64-linux-gnu-g++) and CUDA kernels compiled
  with NVRTC 12.2 to a cubin (or --cuda-format ptx) for sm_87. Load it with
  --variants tvm --tvm-artifact DIR, or with the TVM runtime alone (docs/tvm.md).

measuring the result:
  The command ends by printing the edgebench.full command that measures the tuned database
  (or the exported artifact) against ONNX Runtime: parity and latency, as records in a run
  directory. --measure [DIR] runs it here, writing the run to DIR (default
  results/run-<UTC timestamp>).
"""
