# dist_common.sh — what the dist_*.sh checks share, sourced as
#   . "$(dirname "$0")/dist_common.sh" NAME "$@"
# from a script NAME.sh called with MPIRUN PYTHON: sets MPIRUN, PYTHON,
# TRAIN (FN_BUILD_DIR's train), DATA (FN_SOURCE_DIR's data), work (a
# temporary folder removed on exit), failures (0) and fail MESSAGE, which
# prints it and counts it.
set -u
MPIRUN=${2:?usage: $1.sh MPIRUN PYTHON}
PYTHON=${3:?usage: $1.sh MPIRUN PYTHON}
TRAIN=${FN_BUILD_DIR:?}/train
DATA=${FN_SOURCE_DIR:?}/data
work=$(mktemp -d "/tmp/fn_$1_XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0

fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
