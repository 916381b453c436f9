#!/bin/sh
# /usr/local/bin/vfx in the GPU image: runs the CUDA build of vfx
# (/usr/local/lib/vfx/vfx-cuda) when the container has an NVIDIA GPU, and
# otherwise says why and exits 69 (EX_UNAVAILABLE). The CUDA build links the
# driver library libcuda.so.1, which the NVIDIA container toolkit mounts
# from the host with the /dev/nvidia* devices; without them the binary
# cannot even start (a loader error, or the driver's NoDevice at init).
bin=/usr/local/lib/vfx/vfx-cuda
why=""
# The dynamic loader resolves the binary's libraries without running it.
if ! libs=$(/lib64/ld-linux-x86-64.so.2 --list "$bin" 2>&1); then
	case $libs in
	*libcuda.so.1*) why="the NVIDIA driver library libcuda.so.1 is not in the container" ;;
	*) why="$bin cannot be loaded: $libs" ;;
	esac
elif [ ! -e /dev/nvidiactl ]; then
	why="no /dev/nvidiactl device in the container"
fi
if [ -n "$why" ]; then
	echo "vfx: no NVIDIA GPU in this container ($why). Run the GPU image with the NVIDIA container toolkit (docker run --gpus all, or a Kubernetes node offering nvidia.com/gpu), or use the CPU image ghcr.io/vfxrender/vfx for --backend cpu." >&2
	exit 69
fi
exec "$bin" "$@"
