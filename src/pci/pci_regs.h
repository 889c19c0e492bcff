/*
 * PCI configuration-space offsets and bits used by the emulated function
 * (PCI Local Bus 3.0, PCI Express Base 4.0 chapter 7, MSI-X in PCI 3.0 6.8.2).
 */
#ifndef ERNIC_PCI_PCI_REGS_H
#define ERNIC_PCI_PCI_REGS_H

#define PCI_CFG_SPACE_SIZE      256
#define PCIE_CFG_SPACE_SIZE     4096

#define PCI_VENDOR_ID           0x00
#define PCI_DEVICE_ID           0x02
#define PCI_COMMAND             0x04
#define  PCI_COMMAND_IO         0x0001
#define  PCI_COMMAND_MEMORY     0x0002
#define  PCI_COMMAND_MASTER     0x0004
#define  PCI_COMMAND_PARITY     0x0040
#define  PCI_COMMAND_SERR       0x0100
#define  PCI_COMMAND_INTX_DISABLE 0x0400
#define PCI_STATUS              0x06
#define  PCI_STATUS_CAP_LIST    0x0010
#define  PCI_STATUS_ERRORS      0xf900 /* write-one-to-clear error bits */
#define PCI_REVISION_ID         0x08
#define PCI_CLASS_PROG          0x09
#define PCI_CACHE_LINE_SIZE     0x0c
#define PCI_LATENCY_TIMER       0x0d
#define PCI_HEADER_TYPE         0x0e
#define PCI_BASE_ADDRESS_0      0x10
#define  PCI_BASE_ADDRESS_MEM_TYPE_64 0x04
#define  PCI_BASE_ADDRESS_MEM_PREFETCH 0x08
#define PCI_SUBSYSTEM_VENDOR_ID 0x2c
#define PCI_SUBSYSTEM_ID        0x2e
#define PCI_CAPABILITY_LIST     0x34
#define PCI_INTERRUPT_LINE      0x3c
#define PCI_INTERRUPT_PIN       0x3d

#define PCI_CAP_ID_PM           0x01
#define PCI_CAP_ID_EXP          0x10
#define PCI_CAP_ID_MSIX         0x11

#define PCI_PM_PMC              2
#define PCI_PM_CTRL             4
#define  PCI_PM_CTRL_STATE_MASK 0x0003
#define PCI_PM_SIZEOF           8

#define PCI_EXP_FLAGS           2
#define  PCI_EXP_FLAGS_VERS2    0x0002
#define  PCI_EXP_TYPE_ENDPOINT  0x0
#define PCI_EXP_DEVCAP          4
#define PCI_EXP_DEVCTL          8
#define PCI_EXP_DEVSTA          10
#define PCI_EXP_LNKCAP          12
#define PCI_EXP_LNKCTL          16
#define PCI_EXP_LNKSTA          18
#define PCI_EXP_DEVCTL2         40
#define PCI_EXP_SIZEOF          60

#define PCI_MSIX_FLAGS          2
#define  PCI_MSIX_FLAGS_QSIZE   0x07ff
#define  PCI_MSIX_FLAGS_MASKALL 0x4000
#define  PCI_MSIX_FLAGS_ENABLE  0x8000
#define PCI_MSIX_TABLE          4
#define PCI_MSIX_PBA            8
#define PCI_MSIX_SIZEOF         12
#define PCI_MSIX_ENTRY_SIZE     16
#define PCI_MSIX_ENTRY_VECTOR_CTRL 12
#define  PCI_MSIX_ENTRY_CTRL_MASKBIT 0x1

#endif
