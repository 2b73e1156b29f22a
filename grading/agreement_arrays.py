"""``grading.agreement.pair_scores`` over many confusion matrices at once, as NumPy arrays: the
human baseline's bootstrap scores every resample in one pass. numpy is imported lazily, so
the grading library itself never needs it."""

from __future__ import annotations


def pair_scores_array(cells):
    """``pair_scores`` of many confusion matrices at once (bootstrap resamples): ``cells``
    is an m x 4 integer array (MET-MET, MET-UNMET, UNMET-MET, UNMET-UNMET). Returns the
    five figures as float arrays with NaN where ``pair_scores`` gives None. The same floats:
    the same integer arithmetic and one division of exact integers each (below 2**53)."""
    import numpy as np  # lazily: only the baseline intervals need it

    c = np.asarray(cells, dtype=np.int64).reshape(-1, 4)
    mm, mu, um, uu = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
    n = mm + mu + um + uu
    agreeing = mm + uu
    disagreeing = n - agreeing
    a_met, b_met = mm + mu, mm + um
    chance = a_met * b_met + (n - a_met) * (n - b_met)
    nan = np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        percent = np.where(n > 0, (100 * agreeing) / n, nan)
        kappa = np.where((n > 0) & (chance != n * n), (n * agreeing - chance) / (n * n - chance),
                         nan)
        f1 = [np.where(2 * tp + disagreeing > 0, (2 * tp) / (2 * tp + disagreeing), nan)
              for tp in (mm, uu)]
    both = ~np.isnan(f1[0]) & ~np.isnan(f1[1])
    balanced = np.where(both, (f1[0] + f1[1]) / 2, np.where(np.isnan(f1[0]), f1[1], f1[0]))
    balanced = np.where(n > 0, balanced, nan)
    return percent, kappa, f1[0], f1[1], balanced
