"""The capacity rules' constants (``grading.capacity``'s docstring says what each rule does)."""

INITIAL_LIMIT = 4
# Work waiting before the first answer widens the opening (``expect``): one call of the
# opening per OPENING_WORK calls waiting, up to MAX_OPENING, so that the opening's overshoot
# into a small cap is at most 1% of the work.
OPENING_WORK = 100
MAX_OPENING = 16
MAX_LIMIT = 1024
MAX_STEP = 16  # calls per round the limit may grow by, in slow start and while climbing
# ... or one per STEP_WORK calls of the work still to make (``expect``), when that is more.
STEP_WORK = 100
MAX_PAUSE = 60.0
DECREASE = 0.9
FIRST_PROBE_ROUNDS = 8
MAX_PROBE_ROUNDS = 64
LATENCY_TOLERANCE = 2.0
DELAY_FLOOR = 16  # the delay signal never takes the limit below this
MIN_LATENCY_RISE = 0.005  # seconds: below this, latency "rising" is noise
LATENCY_WARMUP = 20  # samples before the delay signal is trusted
BASELINE_SAMPLES = 40
LONG_SECONDS = 30.0  # the latency baseline is the lowest average of about this long
RAISE_ANSWERS = 8  # edge probes answered in a row (one a round) before the limit rises
QUICK_RAISE_ANSWERS = 2  # ... beside a peer, at a remembered level, after a raise held
RAISE_TRIAL = 8.0  # rounds (of the baseline latency) in which a refused raise was luck
