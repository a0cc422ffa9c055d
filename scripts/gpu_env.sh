# Sourced by scripts/gpu_check.sh and scripts/gpu_fleet_check.sh: a program made runnable in directory `work`
# against a libtorch, as the GPU machine runs it.
#
#   program="$(unpacked "$program" "$work" NAME)"   a bundle's .xz unpacked into work/NAME (any other path as is)
#   use_libtorch "$libtorch" "$work"                libtorch's libraries, and NCCL, on the loader's path

unpacked() {
    local program="$1" work="$2" name="$3"
    if [[ "$program" == *.xz ]]; then
        xz -dc "$program" > "$work/$name"
        chmod +x "$work/$name"
        program="$work/$name"
    fi
    echo "$program"
}

use_libtorch() {
    local libtorch="$1" work="$2"
    # hearth finds NCCL as libnccl.so on the loader's path; PyTorch's wheels ship it as
    # nvidia/nccl/lib/libnccl.so.2.
    mkdir -p "$work/lib"
    local nccl="$libtorch/../nvidia/nccl/lib/libnccl.so.2"
    if [[ -f "$nccl" ]]; then
        ln -s "$(cd "$(dirname "$nccl")" && pwd)/libnccl.so.2" "$work/lib/libnccl.so"
    fi
    export LD_LIBRARY_PATH="$libtorch/lib:$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
