"""MLPerf Inference scenarios through the real load generator (``mlcommons-loadgen``, import
``mlperf_loadgen``): the tasks ``singlestream``, ``multistream`` and ``offline``.

LoadGen is the measurement; the system under test is the variant's own ``Predictor``, the
same object every other task measures, behind LoadGen's SUT/QSL callbacks (the timing
boundary is unchanged: host NCHW float32 in, host logits out, synchronous). Layout:

  settings.py   TestSettings per scenario and profile (paper: LoadGen's built-in mlperf.conf;
                quick/smoke: short windows, said not to be MLPerf-valid), seeded from the
                run's own latency/throughput cells; option checks
  mllog.py      reading the figures and the verdict from the detail log's MLLOG JSON lines
  harness.py    the query sample library over the run's preprocessed images, the SUT over a
                predictor (SingleStream 1 sample, MultiStream 8 as one batch, Offline at the
                best throughput batch), accuracy mode's top-1 from mlperf_log_accuracy.json
  multi.py      Offline on several devices at once (GPU + DLA cores): one queue, round robin
  published.py  MLPerf Inference v3.1's AGX Orin ResNet-50 figures, for the report
  task.py       one scenario cell: a folder of its own (LoadGen reads audit.config from its
                working directory), the run, the record's fields

Imported by the worker only for these tasks; ``mlperf_loadgen`` is imported inside functions.
"""
SCENARIOS = {"singlestream": "SingleStream", "multistream": "MultiStream", "offline": "Offline"}
