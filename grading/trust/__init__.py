"""How far to trust a judge: pure statistics over verdicts (no storage, no UI).

- ``ppi``: prediction-powered estimates of a mean (judge values on every response, people's
  on a random sample of them) with a 95% interval.
- ``stability``: flip rate, Fleiss' kappa and the "noisy" flag across repeated samples.
- ``length_bias``: the slope of the verdict on response length, within human-verdict strata.
- ``position``: how often the chosen option was the one shown first, against chance.
- ``criterion_order``: a criterion judged when listed late minus early in one-shot prompts.
- ``verdict``: the plain-language sentence built from those figures.
"""
