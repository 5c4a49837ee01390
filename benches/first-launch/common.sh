# Sourced by the first-launch scripts after they set `snippets`: builds the post's
# benchmark_03 and first_launch_paths.c into $build, and `post03 N ROUND [ENV...]` prints one
# fresh benchmark_03 reading as a line summary.py reads (NAME r=ROUND n=N event_us=...).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kernels=$here/../../kernels
build=$(mktemp -d)
nvcc -O3 -arch=sm_90 -o "$build/b03" "$snippets/benchmark_03_cudaEvents.cu" -I"$snippets"
nvcc -O2 -o "$build/paths" "$here/first_launch_paths.c" -lcuda -lnvidia-ml

post03() {
    local n=$1 r=$2
    shift 2
    env "$@" "$build/b03" "$n" | sed -n 's/Kernel took: \(.*\)ms/\1/p' \
        | awk -v n="$n" -v r="$r" '{print "b03 r=" r " n=" n " event_us=" $1 * 1000}'
}

# One fresh first_launch_paths.c process (MODE IMAGE N, env in BEFORE), named NAME.
paths() {
    local name=$1 r=$2
    shift 2
    "$build/paths" "$@" | sed "s/^[a-z]* /$name r=$r /"
}
