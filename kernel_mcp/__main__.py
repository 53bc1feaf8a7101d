from kernel_mcp.cli import main

main()
