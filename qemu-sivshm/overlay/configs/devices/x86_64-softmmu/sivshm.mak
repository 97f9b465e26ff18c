# The devices this project's QEMU is built with, and nothing else
# (configure --without-default-devices --with-devices-x86_64=sivshm).

# Boards: q35 for the IOMMU tests, pc for everything else.
CONFIG_Q35=y
CONFIG_I440FX=y

# Host IOMMU emulation: the PiBooster host module's DMA confinement.
CONFIG_VTD=y

# Inter-VM shared memory: ivshmem-plain and ivshmem-doorbell are the
# baselines sivshm is compared with.
CONFIG_IVSHMEM_DEVICE=y

# edu: the DMA-capable "assigned device" of the IOMMU tests.
CONFIG_EDU=y

# virtio: the network baseline and the test harness's result channel.
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_SERIAL=y

# PCI(e) bridges and root ports (pci-bridge itself is always built).
CONFIG_PCIE_PORT=y

# This project's devices.
CONFIG_SIVSHM=y
CONFIG_PAGETYPE=y
