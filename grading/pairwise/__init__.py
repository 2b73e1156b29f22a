"""Pairwise comparison: which of two responses better satisfies a rubric, criterion by
criterion, asked in both orders; results over many pairs and a Bradley-Terry leaderboard.

``grading.pairwise.prompts`` / ``parsing``: the question and reading the answer;
``orders``: the both-orders rule; ``aggregation``: preferences -> the pair's result through
``grading.aggregation.aggregate_verdicts``; ``grader``: PairwiseGrader; ``matching``: pairing
two sources' responses; ``summary``: wins / ties / losses with intervals and the
position-consistency rate; ``bradley_terry``: the leaderboard of three or more sources.
"""

from grading.pairwise.grader import IdenticalResponsesError, PairwiseGrader
from grading.pairwise.report import CriterionPreference, PairReport

__all__ = ["CriterionPreference", "IdenticalResponsesError", "PairReport", "PairwiseGrader"]
